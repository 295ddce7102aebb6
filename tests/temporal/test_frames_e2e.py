"""Frame checks on the real dev server: an act that also changes what it must leave alone."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from helpers.roles import rows_roles
from helpers.sor import make_rows_db, row_count, rows_task

import landed


def _framed(task_id: str, db: Path, **act: Any) -> dict[str, Any]:
    """45 rows into batch "fr-new" (under this test's task id), with batch "fr-keep" (30 rows)
    declared as a frame: it must read the same before and after the act."""
    task = rows_task(task_id, db, expect=45, batch=f"{task_id}-new", write=45, **act)
    task["frames"] = [
        {
            "action": "batch keep stays as it was",
            "probe": {
                "kind": "record",
                "source": "rows-db",
                "query": "select count(*) from rows where batch = ?",
                "params": [f"{task_id}-keep"],
            },
            "expect": {"type": "count", "value": 30},
        }
    ]
    return task


async def test_frame_that_changed_is_not_done(temporal_dev: str, tmp_path: Path) -> None:
    db = make_rows_db(tmp_path / "rows.db", preexisting=30, batch="frames-del-keep")
    make_rows_db(db, preexisting=30, batch="frames-ok-keep")
    async with rows_roles(temporal_dev, tmp_path, db) as roles:
        deleted = await roles.client.run(_framed("frames-del", db, delete_batch="frames-del-keep"))
        kept = await roles.client.run(_framed("frames-ok", db))
    # The plan's own step reads back pass: 45 rows landed in both tasks.
    assert [p.result for p in deleted.proof] == ["pass"]
    assert row_count(db, "frames-del-new") == 45 and row_count(db, "frames-del-keep") == 0
    assert deleted.verdict not in ("verified", "reconciled")
    assert deleted.landed is not None
    found = [f for f in deleted.landed.findings if f.startswith("FRAME:")]
    assert len(found) == 1 and "'batch keep stays as it was'" in found[0], found
    assert "changed" in found[0]
    assert deleted.landed.frames == [  # type: ignore[attr-defined]
        {"action": "batch keep stays as it was", "held": False}
    ]
    # The same task whose act leaves the frame alone is verified.
    assert kept.verdict == "verified", kept.landed
    assert kept.landed is not None
    assert not [f for f in kept.landed.findings if f.startswith("FRAME:")]
    assert kept.landed.frames == [  # type: ignore[attr-defined]
        {"action": "batch keep stays as it was", "held": True}
    ]


async def test_frame_that_cannot_be_read_is_not_done(temporal_dev: str, tmp_path: Path) -> None:
    db = make_rows_db(tmp_path / "rows.db")
    task = _framed("frames-unread", db)
    # A source the verifier does not configure: nothing could check the frame, so no act.
    task["frames"][0]["probe"]["source"] = "nowhere-db"
    async with rows_roles(temporal_dev, tmp_path, db) as roles:
        with pytest.raises(landed.TaskRefused, match=r"frame 1 \(batch keep stays as it was\)"):
            await roles.client.start(task)
        queue = roles.queues["runner"]
        unchecked = landed.Client(roles.temporal, task_queue=queue, check_roles=False)
        receipt = await unchecked.run(task)
    assert receipt.verdict == "blocked" and row_count(db, "frames-unread-new") == 0
    assert receipt.landed is not None
    first = receipt.landed.findings[0]
    assert "frame 1: refused: no source named 'nowhere-db'" in first, first
    assert "LANDED_SOURCES__NOWHERE_DB__URL" in first
