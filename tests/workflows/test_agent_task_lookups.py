"""What a client learns of an AgentTask while it runs and after: progress, status, search
attributes, and the receipt, from the ledger once Temporal has forgotten the run."""

from __future__ import annotations

import uuid
from datetime import timedelta
from pathlib import Path

import pytest
from helpers.agent_task import agent_roles, at_step, held_in_act
from helpers.relay import relayed
from helpers.sor import Site, act_runs, make_rows_db, rows_task
from helpers.wait import until
from temporalio.service import RPCError, RPCStatusCode

import landed
from landed.ledger.base import canonical_json
from landed.ledger.factory import open_ledger
from landed.temporal.plugin import connect


async def test_queries_and_search_attributes(
    temporal_dev: str, tmp_path: Path, db: Path, site: Site
) -> None:
    gate = tmp_path / "go"
    async with agent_roles(temporal_dev, tmp_path, db, site) as roles:
        handle, progress = await held_in_act(roles, db, gate, "query-1", "q")
        assert progress.step == "act" and progress.rung == "planned"
        so_far = await roles.client.receipt("query-1")
        assert so_far.verdict is None and so_far.task_id == "query-1"
        status = await roles.client.status("query-1")
        assert status.execution == "RUNNING" and not status.settled
        gate.touch()
        receipt = await handle.result()
        assert receipt.verdict == "verified"
        status = await roles.client.status("query-1")
        assert status.settled and status.verdict == "verified"
        # Visibility is eventually consistent: poll the list query briefly.
        query = 'LandedVerdict="verified" and LandedOwner="agent-a" and WorkflowId="query-1"'

        async def listed() -> list[str]:
            return [w.id async for w in roles.temporal.list_workflows(query)]

        found = await until("the task listed by its verdict and owner", listed, timeout=10)
        assert found == ["query-1"]


async def test_progress_shows_the_acts_rung_while_the_read_back_is_pending(
    temporal_dev: str, tmp_path: Path, db: Path
) -> None:
    """Between the act's report and the verdict, progress is the grade of what is known so far.
    The act's word alone is an assertion (P1) that proves no rung, so the rung stays planned
    while the read-back is pending; the read-back then proves it verified."""
    make_rows_db(db)
    gate = tmp_path / "read-back-go"
    async with relayed(temporal_dev, tmp_path, db, "held-after", gate) as roles:
        handle = await roles.client.start(rows_task("rung-1", db, expect=2, batch="rg", write=2))
        pending = await at_step(handle, "verify")
        so_far = await roles.client.receipt("rung-1")
        assert act_runs(db, "rung-1") == [(1, "rung-1")]
        gate.touch()
        receipt = await handle.result()
        done = await handle.progress()
    assert pending.step == "verify" and pending.verdict is None
    assert pending.rung == "planned" and pending.proof_level == "P1", pending
    # The receipt so far is graded the same way, and has no verdict and no settle time yet.
    assert so_far.verdict is None and so_far.verdict_by is None, so_far
    assert so_far.settled_at is None, so_far
    assert so_far.landed is not None
    assert (so_far.landed.rung, so_far.landed.proof_level) == ("planned", "P1"), so_far.landed
    assert receipt.verdict == "verified"
    assert done.rung == "verified" and done.verdict == "verified" and done.step == "settled"


async def test_receipt_and_status_of_a_task_temporal_forgot_come_from_the_ledger(
    temporal_dev: str, tmp_path: Path, db: Path, site: Site
) -> None:
    """After Temporal drops a settled run, the client asks a runner for the ledger's receipt
    (the client holds no ledger credentials); an id the ledger does not know either is still
    NOT_FOUND, and nothing is acted for either."""
    async with agent_roles(temporal_dev, tmp_path, db, site) as roles:
        ran = await roles.client.run(rows_task("kept", db, expect=1, batch="dr", write=1))
        # What retention leaves (the ledger holds the receipt, Temporal holds no run of its id),
        # without waiting the half minute the dev server takes to delete a closed run.
        settled = ran.model_copy(update={"task_id": "dropped"})
        async with await open_ledger(roles.ledger_url) as ledger:
            assert await ledger.append(settled)
        receipt = await roles.client.receipt("dropped")
        status = await roles.client.status("dropped")
        with pytest.raises(RPCError) as unknown:
            await roles.client.receipt("never-submitted")
        with pytest.raises(RPCError) as unknown_status:
            await roles.client.status("never-submitted")
    assert settled.verdict == "verified"
    assert canonical_json(receipt) == canonical_json(settled)
    assert (status.execution, status.settled, status.verdict) == ("FORGOTTEN", True, "verified")
    assert status.rung == "verified"
    assert unknown.value.status == unknown_status.value.status == RPCStatusCode.NOT_FOUND
    assert act_runs(db, "dropped") == [] and act_runs(db, "kept") == [(1, "kept")]


async def test_receipt_of_a_forgotten_task_with_no_runner_says_so(
    temporal_dev: str, tmp_path: Path, db: Path, site: Site
) -> None:
    """No runner polls the queue: the lookup gives up by its timeout and names the queue."""
    queue = f"no-runner-{uuid.uuid4().hex[:8]}"
    client = landed.Client(
        await connect(identity="client@test", address=temporal_dev),
        task_queue=queue,
        lookup_timeout=timedelta(seconds=2),
    )
    with pytest.raises(landed.RunnerNotAnswering, match="no runner read its receipt") as err:
        await client.receipt("gone")
    assert queue in str(err.value)


async def test_receipt_of_a_run_that_closed_unsettled_is_an_error_not_a_receipt(
    temporal_dev: str, tmp_path: Path, db: Path, site: Site
) -> None:
    gate = tmp_path / "go"
    async with agent_roles(temporal_dev, tmp_path, db, site) as roles:
        await held_in_act(roles, db, gate, "cut-off", "co")
        await roles.temporal.get_workflow_handle("cut-off").terminate("an operator stopped it")
        gate.touch()  # let the act's thread finish so the actor can stop
        with pytest.raises(landed.TaskNotSettled, match="TERMINATED without a settled receipt"):
            await roles.client.receipt("cut-off")
        # Submitting it again says so, rather than handing back a task that never settles.
        task = rows_task("cut-off", db, expect=1, batch="co", write=1, wait_for_file=str(gate))
        with pytest.raises(landed.TaskNotSettled, match="TERMINATED without a settled receipt"):
            await roles.client.start(task)
        handle = landed.TaskHandle(roles.temporal.get_workflow_handle("cut-off"), [], True)
        with pytest.raises(landed.TaskNotSettled, match="without a settled receipt"):
            await handle.result()
        async with await roles.ledger() as ledger:
            assert await ledger.get("cut-off") == []


async def test_status_and_receipt_of_a_task_no_runner_answers_for_say_so(
    temporal_dev: str, tmp_path: Path, db: Path, site: Site
) -> None:
    async with agent_roles(temporal_dev, tmp_path, db, site) as roles:
        # Started on a queue no runner polls: it runs (in Temporal's eyes) and nobody answers.
        orphan = landed.Client(
            roles.temporal, task_queue=f"nobody-{uuid.uuid4().hex[:8]}", check_roles=False
        )
        await orphan.start(rows_task("orphan", db, expect=1, batch="or", write=1))
        status = await orphan.status("orphan")
        assert status.execution == "RUNNING" and status.step.startswith("unknown (no runner")
        with pytest.raises(landed.RunnerNotAnswering, match="landed worker runner"):
            await orphan.receipt("orphan")
        await roles.temporal.get_workflow_handle("orphan").terminate("test over")
