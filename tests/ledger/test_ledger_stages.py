"""A recheck's lifecycle row (confirmed, reversed) is a new row beside the settled one, on both
backends: append-only, idempotent on retry, and the latest row of its task."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import psycopg
import pytest
from psycopg import sql

from landed.ledger.base import LedgerConflict
from landed.ledger.factory import open_ledger
from landed.receipts.model import LandedExtension, Receipt


def _receipt(task_id: str, lifecycle: str, verdict: str, second: int) -> Receipt:
    return Receipt(
        task_id=task_id,
        owner="agent-a",
        claimed_status="done",
        verdict=verdict,
        verdict_by="runner",
        settled_at=datetime(2026, 11, 7, 1, 0, second, tzinfo=UTC),
        landed=LandedExtension.model_validate({"attempt": 1, "lifecycle": lifecycle}),
    )


@pytest.fixture
def pg_url(postgres_dsn: str) -> Iterator[str]:
    tag = uuid.uuid4().hex[:10]
    schema, role = f"ledger_st_{tag}", f"landed_writer_st_{tag}"
    yield f"{postgres_dsn}?schema={schema}&writer_role={role}"
    with psycopg.connect(postgres_dsn, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema)))
        conn.execute(sql.SQL("DROP ROLE IF EXISTS {}").format(sql.Identifier(role)))


@pytest.fixture(params=["sqlite", "postgres"])
def ledger_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'l.db'}"
    return str(request.getfixturevalue("pg_url"))


async def test_a_reversal_is_a_new_row_beside_the_settled_one(ledger_url: str) -> None:
    settled = _receipt("t", "verified", "verified", 1)
    reversed_ = _receipt("t", "reversed", "reversed", 9)
    async with await open_ledger(ledger_url) as ledger:
        assert await ledger.append(settled) is True
        assert await ledger.append(_receipt("u", "verified", "verified", 1)) is True
        assert await ledger.append(reversed_) is True
        # A retry of the recheck's append stores nothing, and changes nothing.
        assert await ledger.append(reversed_) is False
        with pytest.raises(LedgerConflict):
            await ledger.append(_receipt("t", "reversed", "reversed", 10))
        assert [r.verdict for r in await ledger.get("t")] == ["verified", "reversed"]
        latest = await ledger.latest("t")
        assert latest is not None and latest.verdict == "reversed"
        assert [(r.task_id, r.verdict) for r in await ledger.board()] == [
            ("t", "reversed"),
            ("u", "verified"),
        ]
        assert await ledger.count() == 3
