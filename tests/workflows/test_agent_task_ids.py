"""One task per task id: the same spec again attaches or is answered from the ledger without
acting; another spec under the id is refused."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers.agent_task import agent_roles, second_run
from helpers.sor import Site, act_runs, row_count, rows_task

import landed
from landed.ledger.base import canonical_json
from landed.ledger.factory import open_ledger
from landed.receipts.model import LandedExtension


async def test_same_task_id_twice_acts_once(
    temporal_dev: str, tmp_path: Path, db: Path, site: Site
) -> None:
    async with agent_roles(temporal_dev, tmp_path, db, site) as roles:
        task = rows_task("twice", db, expect=2, batch="t", write=2)
        first = await roles.client.start(task)
        second = await roles.client.start(task)  # while running: attaches
        assert not first.existing
        assert (await first.result()).verdict == "verified"
        third = await roles.client.start(task)  # after it closed: rejected, then attached
        assert third.existing
        assert (await third.result()).verdict == "verified"
        await second.result()
    assert act_runs(db, "twice") == [(1, "twice")]
    assert row_count(db, "t") == 2


async def test_a_task_temporal_forgot_is_answered_from_the_ledger_not_acted_again(
    temporal_dev: str, tmp_path: Path, db: Path, site: Site
) -> None:
    """Once Temporal drops a closed run (its retention), the same task id can start a new run;
    a second run is started here directly, as that would. The runner finds the receipt in the
    ledger and hands it back without acting."""
    async with agent_roles(temporal_dev, tmp_path, db, site) as roles:
        task = rows_task("forgotten", db, expect=2, batch="fg", write=2)
        first = await roles.client.run(task)
        again = await second_run(roles, task)
        async with await roles.ledger() as ledger:
            stored = await ledger.get("forgotten")
    assert act_runs(db, "forgotten") == [(1, "forgotten")]
    assert row_count(db, "fg") == 2
    assert first.verdict == "verified"
    assert stored == [again]
    assert again.landed is not None and first.landed is not None
    assert again.landed.run_id == first.landed.run_id  # type: ignore[attr-defined]
    assert canonical_json(again) == canonical_json(first)  # the ledger's form of the same


async def test_submitting_another_task_under_a_running_task_id_is_refused(
    temporal_dev: str, tmp_path: Path, db: Path, site: Site
) -> None:
    """The same spec again attaches to the running task; another spec under its id is refused
    (its receipt would not be this task's), and nothing of it acts."""
    gate = tmp_path / "go"
    async with agent_roles(temporal_dev, tmp_path, db, site) as roles:
        task = rows_task("taken", db, expect=1, batch="tk", write=1, wait_for_file=str(gate))
        first = await roles.client.start(task)
        again = await roles.client.start(task)
        assert again.existing and not first.existing
        other = rows_task("taken", db, expect=9, batch="tk2", write=9)
        with pytest.raises(landed.TaskIdReused, match="give the new task its own task_id"):
            await roles.client.start(other)
        gate.touch()
        receipt = await first.result()
        with pytest.raises(landed.TaskIdReused):
            await roles.client.run(other)  # closed now: still another task's id
    assert receipt.verdict == "verified"
    assert act_runs(db, "taken") == [(1, "taken")]
    assert row_count(db, "tk2") == 0


async def test_a_task_id_reused_for_other_work_fails_closed(
    temporal_dev: str, tmp_path: Path, db: Path, site: Site
) -> None:
    """After its run is gone from Temporal, the same id submitted with another spec is neither
    answered with the old receipt nor acted: it fails, naming the reuse."""
    async with agent_roles(temporal_dev, tmp_path, db, site) as roles:
        first = await roles.client.run(rows_task("reused", db, expect=2, batch="ru", write=2))
        other = rows_task("reused", db, expect=5, batch="ru2", write=5)
        with pytest.raises(landed.TaskIdReused, match="for a different task"):
            await second_run(roles, other)  # the runner's plan refuses it, the handle says so
        async with await roles.ledger() as ledger:
            stored = await ledger.get("reused")
    assert act_runs(db, "reused") == [(1, "reused")]
    assert row_count(db, "ru2") == 0
    assert [canonical_json(r) for r in stored] == [canonical_json(first)]


async def test_a_task_id_whose_stored_receipt_records_no_spec_is_refused(
    temporal_dev: str, tmp_path: Path, db: Path, site: Site
) -> None:
    """The ledger holds a receipt under the id that records no spec digest (written by an older
    landed, or by hand): it cannot be shown to be this task, so the task is neither answered
    with it nor acted."""
    async with agent_roles(temporal_dev, tmp_path, db, site) as roles:
        async with await open_ledger(roles.ledger_url) as ledger:
            await ledger.append(
                landed.Receipt(
                    task_id="undigested",
                    owner="agent-a",
                    claimed_status="done",
                    verdict="verified",
                    verdict_by="runner",
                    landed=LandedExtension(attempt=1),
                )
            )
        task = rows_task("undigested", db, expect=2, batch="ud", write=2)
        with pytest.raises(landed.TaskIdReused, match="records no spec digest"):
            await roles.client.run(task)
    assert act_runs(db, "undigested") == []
    assert row_count(db, "ud") == 0
