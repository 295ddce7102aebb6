"""The ledger tests' ``owner``: one ledger per test, on SQLite and (slow) on PostgreSQL."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers.chain import Owner, pg_ledger


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.slow)])
def owner(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Owner]:
    if request.param == "sqlite":
        path = tmp_path / "ledger.db"
        yield Owner(f"sqlite:///{path}", path=path)
        return
    with pg_ledger(request.getfixturevalue("postgres_dsn")) as pg:
        yield pg
