"""One meaning per expectation, on a real Temporal dev server and the role processes: a count
is the rows that exist, a change is the rows the act added."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest
from helpers.roles import rows_roles
from helpers.sor import make_rows_db, rows_task

import landed

pytestmark = pytest.mark.slow


def _read_back(receipt: landed.Receipt) -> landed.ProofItem:
    (proof,) = [p for p in receipt.proof if p.kind in landed.READ_BACK_KINDS]
    return proof


def _change_task(task_id: str, db: Path, *, change: int, batch: str, write: int) -> dict[str, Any]:
    task = rows_task(task_id, db, expect=0, batch=batch, write=write)
    task["outcome"] = f"{change} more rows of batch {batch} are in the rows table"
    task["proof_plan"][0]["expect"] = {"type": "change", "value": change}
    return task


async def test_a_count_is_the_rows_that_exist(temporal_dev: str, tmp_path: Path) -> None:
    db = tmp_path / "rows.db"
    tag = uuid.uuid4().hex[:8]
    for batch in ("over", "exact"):
        make_rows_db(db, preexisting=20, batch=f"{batch}-{tag}")
    async with rows_roles(temporal_dev, tmp_path, db) as roles:
        # 20 there, 45 inserted: 65 exist, so "45 exist" is not done.
        over = await roles.client.run(
            rows_task(f"meaning-over-{tag}", db, expect=45, batch=f"over-{tag}", write=45)
        )
        # 20 there, 25 inserted: 45 exist.
        exact = await roles.client.run(
            rows_task(f"meaning-exact-{tag}", db, expect=45, batch=f"exact-{tag}", write=25)
        )
    assert over.verdict not in ("verified", "reconciled")
    assert _read_back(over).result == "duplicated"
    assert exact.verdict == "verified", _read_back(exact)
    for receipt in (over, exact):
        assert receipt.landed is not None
        assert receipt.landed.model_dump().get("expect_meaning") == 2


async def test_a_change_is_the_rows_the_act_added(temporal_dev: str, tmp_path: Path) -> None:
    db = tmp_path / "rows.db"
    tag = uuid.uuid4().hex[:8]
    make_rows_db(db, preexisting=20, batch=f"added-{tag}")
    make_rows_db(db, preexisting=45, batch=f"none-{tag}")
    async with rows_roles(temporal_dev, tmp_path, db) as roles:
        # 20 there, 45 inserted: a change of +45.
        added = await roles.client.run(
            _change_task(f"meaning-added-{tag}", db, change=45, batch=f"added-{tag}", write=45)
        )
        # 45 there, none inserted: nothing changed.
        none = await roles.client.run(
            _change_task(f"meaning-none-{tag}", db, change=45, batch=f"none-{tag}", write=0)
        )
    assert added.verdict == "verified", _read_back(added)
    assert _read_back(added).expect == "change(+45)"
    assert none.verdict not in ("verified", "reconciled")
    assert _read_back(none).result == "empty"
