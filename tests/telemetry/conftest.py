"""A ledger per test (SQLite file or a PostgreSQL schema of its own)."""

from __future__ import annotations

import secrets
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import psycopg
import pytest
from helpers.exporter import Place
from psycopg import sql

from landed.ledger.base import Ledger
from landed.ledger.factory import open_ledger


@pytest.fixture
def sqlite_place(tmp_path: Path) -> Place:
    path = tmp_path / "ledger.db"
    return Place(f"sqlite:///{path}", "sqlite", path=path)


@pytest.fixture
def pg_place(postgres_dsn: str) -> Iterator[Place]:
    tag = secrets.token_hex(4)
    schema, role = f"exporter_t_{tag}", f"landed_writer_x_{tag}"
    yield Place(
        f"{postgres_dsn}?schema={schema}&writer_role={role}",
        "postgres",
        schema=schema,
        admin_dsn=postgres_dsn,
    )
    with psycopg.connect(postgres_dsn, autocommit=True) as conn:
        for name in (schema, f"{schema}_away"):
            conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(name)))
        conn.execute(sql.SQL("DROP ROLE IF EXISTS {}").format(sql.Identifier(role)))


@pytest.fixture(params=["sqlite", "pg"])
def place(request: pytest.FixtureRequest) -> Place:
    return request.getfixturevalue(f"{request.param}_place")  # type: ignore[no-any-return]


@pytest.fixture
async def ledger(place: Place) -> AsyncIterator[Ledger]:
    async with await open_ledger(place.url) as opened:
        yield opened
