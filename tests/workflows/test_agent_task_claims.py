"""AgentTask's claims: each act is claimed in the workflow task that schedules it, and a run
that finds another run's claim (a run lost mid-act) never acts again."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from pathlib import Path

import pytest
from helpers.agent_task import agent_roles, at_step, held_in_act, second_run
from helpers.relay import relayed
from helpers.sor import Site, act_runs, make_rows_db, publish_task, row_count, rows_task
from helpers.wait import until
from temporalio.api.enums.v1 import EventType

import landed
from landed.ledger.base import canonical_json
from landed.ledger.factory import open_ledger
from landed.task.assemble import assemble_receipt
from landed.task.messages import ActReport, spec_digest


async def test_the_first_act_is_claimed_by_the_plan_unless_a_pre_read_comes_between(
    temporal_dev: str, tmp_path: Path, db: Path, site: Site
) -> None:
    """Each act is claimed in the workflow task that schedules it: by a claim step of its own,
    after the fleet gate (GOV-4) that now runs between the plan and the first act; the plan
    claimed it itself when nothing ran between them, and still does for a run from before."""
    markers: dict[bool, int] = {}
    async with agent_roles(temporal_dev, tmp_path, db, site, task_may_skip_pre_read=True) as roles:
        for pre_read in (False, True):
            task = rows_task(f"claimed-{pre_read}", db, expect=1, batch=f"c{pre_read}", write=1)
            task["pre_read"] = pre_read
            receipt = await roles.client.run(task)
            assert receipt.verdict == "verified", receipt.landed
            history = await roles.temporal.get_workflow_handle(task["task_id"]).fetch_history()
            # Local activities' markers (a patch marker says which code ran, not a step).
            markers[pre_read] = sum(
                e.event_type == EventType.EVENT_TYPE_MARKER_RECORDED
                and e.marker_recorded_event_attributes.marker_name != "core_patch"
                for e in history.events
            )
    # plan + claim + settle, with a pre-read or without
    assert markers == {False: 3, True: 3}


async def test_a_run_stopped_before_its_act_leaves_no_claim_and_a_later_run_acts(
    temporal_dev: str, tmp_path: Path, db: Path, site: Site
) -> None:
    """Only a run about to act claims: one stopped in its pre-read (past its plan) leaves
    nothing that could keep a later run of the id from acting."""
    async with agent_roles(temporal_dev, tmp_path, db, site) as roles:
        task = publish_task("early", "early-post")
        site.count_delay_s = 2.0  # a slow system of record holds the pre-read
        handle = await roles.client.start(task)
        await at_step(handle, "pre-read")
        await roles.temporal.get_workflow_handle("early").terminate("an operator stopped it")
        site.count_delay_s = 0.0
        again = await asyncio.wait_for(second_run(roles, task), 60)
    assert site.count("early-post") == 1
    assert again.verdict == "verified", again.landed


@pytest.mark.parametrize(
    ("landed_before", "pre_read"), [(True, True), (False, True), (True, False), (False, False)]
)
async def test_a_run_that_closed_unsettled_is_never_acted_again_by_a_later_run(
    temporal_dev: str, tmp_path: Path, db: Path, site: Site, landed_before: bool, pre_read: bool
) -> None:
    """A run terminated mid-act leaves no receipt, only its claim; once Temporal forgets it
    (retention), a new run of the same id finds the claim before its act, does not act, and
    settles on what it reads back, never as verified: with no before-state from before that
    act, the read-back cannot show the act made what it finds."""
    gate = tmp_path / "go"
    task_id = f"lost-{landed_before}-{pre_read}"
    # Without a pre-read, the plan claims the first act itself (the same workflow task).
    async with agent_roles(temporal_dev, tmp_path, db, site, task_may_skip_pre_read=True) as roles:
        await held_in_act(roles, db, gate, task_id, task_id, pre_read=pre_read)
        # The actor has started the act (the step shows it scheduled).
        await until("the actor starting the act", lambda: act_runs(db, task_id), timeout=10)
        first = roles.temporal.get_workflow_handle(task_id)
        await first.terminate("an operator stopped it")
        if landed_before:
            gate.touch()  # the act's thread still writes its row
            await until("the act's row", lambda: row_count(db, task_id) == 1, timeout=10)
        task = rows_task(task_id, db, expect=1, batch=task_id, write=1, wait_for_file=str(gate))
        task["pre_read"] = pre_read
        # A run that acted again would wait on the closed gate: bounded, so it fails, not hangs.
        again = await asyncio.wait_for(second_run(roles, task), 60)
        rows_at_settle = row_count(db, task_id)
        gate.touch()  # (the terminated act, still waiting, may now finish: a late write)
        async with await roles.ledger() as ledger:
            stored = await ledger.get(task_id)
    assert act_runs(db, task_id) == [(1, task_id)]  # the first run's act only
    assert rows_at_settle == (1 if landed_before else 0)
    assert [canonical_json(r) for r in stored] == [canonical_json(again)]
    assert again.landed is not None
    assert again.verdict == "planned", again.landed.findings
    findings = " ".join(again.landed.findings)
    assert "closed without settling" in findings and "did not run it again" in findings


async def test_a_lost_runs_receipt_settled_late_is_the_record_not_a_conflict(
    temporal_dev: str, tmp_path: Path, db: Path
) -> None:
    """Run A was about to act when it was lost; run B of the task does not act and reads
    back. A's settle commits late, before B's: B ends with the ledger's receipt instead of
    failing on a conflict."""
    make_rows_db(db)
    gate = tmp_path / "go"
    task = rows_task("late-lost", db, expect=1, batch="ll", write=1)
    spec = landed.TaskSpec.model_validate(task)
    digest = spec_digest(spec)
    async with relayed(temporal_dev, tmp_path, db, "held-after", gate) as roles:
        async with await open_ledger(roles.ledger_url) as ledger:
            await ledger.claim("late-lost", "lost-run", 1, digest)
        handle = await roles.client.start(task)
        await at_step(handle, "verify")
        late = assemble_receipt(
            spec,
            ActReport(claimed_status="done", report="A's act"),
            [],
            attempt=1,
            settled_at=datetime.now(UTC),
            extra={"spec_sha256": digest, "run_id": "lost-run"},
        ).model_copy(update={"verdict": "planned", "verdict_by": "runner-a"})
        async with await open_ledger(roles.ledger_url) as ledger:
            assert await ledger.append(late)
        gate.touch()
        receipt = await asyncio.wait_for(handle.result(), 60)
        async with await roles.ledger() as ledger:
            stored = await ledger.get("late-lost")
    assert [canonical_json(r) for r in stored] == [canonical_json(late)]
    assert canonical_json(receipt) == canonical_json(late)
    assert act_runs(db, "late-lost") == []
