"""AgentTask on the real dev server: verdicts, DOD-10 reconciliation, retries, queries, replay."""

from __future__ import annotations

import asyncio
import json
import os
import sqlite3
import sys
import time
import uuid
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from helpers.roles import Roles, run_roles
from helpers.sor import Site, act_runs, make_rows_db, publish_task, row_count, rows_task
from helpers.wait import until
from temporalio import activity, workflow
from temporalio.api.common.v1 import WorkflowExecution
from temporalio.api.enums.v1 import EventType
from temporalio.api.workflowservice.v1 import ResetWorkflowExecutionRequest
from temporalio.client import WorkflowHandle, WorkflowHistory
from temporalio.common import WorkflowIDReusePolicy
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.service import RPCError, RPCStatusCode
from temporalio.worker import (
    ActivityInboundInterceptor,
    ExecuteActivityInput,
    Interceptor,
    Replayer,
    StartActivityInput,
    StartLocalActivityInput,
    Worker,
    WorkflowInboundInterceptor,
    WorkflowInterceptorClassInput,
    WorkflowOutboundInterceptor,
)
from temporalio.workflow import ActivityHandle

import landed
from landed.activities.verify import VerifyActivities
from landed.ledger.base import canonical_json
from landed.ledger.factory import open_ledger
from landed.probes.contract import Contract, NonEmpty, Observation, Outcome, RecordProbe
from landed.probes.expect import label_for
from landed.probes.sources import SourceRegistry
from landed.receipts.model import LandedExtension
from landed.signing import KeyPair, TrustStore, sign_proof
from landed.task.assemble import assemble_receipt, proof_item
from landed.task.messages import (
    ActInput,
    ActReport,
    Progress,
    SettleInput,
    VerifyInput,
    VerifyOutput,
    spec_digest,
)
from landed.task.names import (
    ACT_ACTIVITY,
    CLAIM_ACTIVITY,
    PLAN_ACTIVITY,
    SETTLE_ACTIVITY,
    VERIFY_ACTIVITY,
)
from landed.temporal.plugin import connect, landed_plugin, strict_workflow_runner
from landed.workflows.agent_task import AgentTask

HISTORIES = Path(__file__).parent / "histories"
# Histories made with the test's timer after the claiming step: they replay with it only.
TIMER_HISTORIES = HISTORIES / "claim_then_timer"
_CLAIM_AGAIN_PATCH = "landed-claim-again-after-reset"


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return make_rows_db(tmp_path / "rows.db")


@pytest.fixture
def site() -> Any:
    s = Site().start()
    yield s
    s.stop()


def _roles(
    temporal_dev: str,
    tmp_path: Path,
    db: Path,
    site: Site,
    *,
    interceptors: tuple[Interceptor, ...] = (),
    **runner: Any,
) -> Any:
    return run_roles(
        temporal_dev,
        tmp_path,
        credentials={"rows-db": f"sqlite:///{db}", "site": site.url},
        sources={"rows-db": {"url": f"sqlite:///{db}"}, "site": {"url": site.url}},
        runner=runner or None,
        runner_interceptors=interceptors,
    )


def _read_back(receipt: landed.Receipt) -> list[landed.ProofItem]:
    return [p for p in receipt.proof if p.kind in landed.READ_BACK_KINDS]


async def _landed(*args: str) -> bytes:
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "landed",
        *args,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await proc.communicate()
    assert proc.returncode in (0, 1), (args, proc.returncode, err.decode(errors="replace"))
    return out


async def _verdicts_match_checker(roles: Roles, receipt: landed.Receipt) -> dict[str, object]:
    """What the workflow stored is what `landed check --trust KEY.pub` says about the receipt
    exported from the ledger: another process, the receipt as JSON, only the public key."""
    exported = await _landed("receipts", "export", "--ledger", roles.ledger_url)
    lines = [json.loads(line) for line in exported.decode().splitlines() if line.strip()]
    mine = [line for line in lines if line["task_id"] == receipt.task_id]
    assert len(mine) == 1, mine
    assert mine[0]["verdict"] == receipt.verdict
    path = roles.public_key.parent / f"{receipt.task_id}.jsonl"
    path.write_text(json.dumps(mine[0]) + "\n")
    out = await _landed("check", str(path), "--json", "--trust", str(roles.public_key))
    (task,) = json.loads(out)["tasks"]
    assert receipt.landed is not None and receipt.landed.rung == receipt.verdict
    assert task["proof_level"] == receipt.landed.proof_level
    assert task["proven_status"] == receipt.verdict
    assert task["meets_bar"] == receipt.landed.meets_bar  # type: ignore[attr-defined]
    return dict(task)


async def test_rows_that_land_are_verified(
    temporal_dev: str, tmp_path: Path, db: Path, site: Site
) -> None:
    async with _roles(temporal_dev, tmp_path, db, site) as roles:
        receipt = await roles.client.run(rows_task("land-1", db, expect=5, batch="b1", write=5))
        assert receipt.verdict == "verified"
        assert receipt.landed is not None and receipt.landed.proof_level == "P3"
        (proof,) = _read_back(receipt)
        assert proof.result == "pass"
        assert proof.checked_by == roles.identities["verifier"]  # not the actor (DOD-2)
        assert receipt.verdict_by == roles.identities["runner"]
        assert proof.landed is not None and "signature" in proof.landed
        await _verdicts_match_checker(roles, receipt)
        ledger = await roles.ledger()
        try:
            stored = await ledger.get("land-1")
        finally:
            await ledger.close()
        assert [r.verdict for r in stored] == ["verified"]
        assert row_count(db, "b1") == 5


async def test_scenarios_not_done(temporal_dev: str, tmp_path: Path, db: Path, site: Site) -> None:
    make_rows_db(db, preexisting=45, batch="vac")
    async with _roles(temporal_dev, tmp_path, db, site) as roles:
        # One at a time: with max_cached_workflows=0 the SDK's core stalls concurrent runs that
        # use local activities (sdk-rust#886, #1482); the workflows run in parallel elsewhere.
        swallowed = await roles.client.run(rows_task("swallow", db, expect=45, batch="s"))
        half = await roles.client.run(rows_task("half", db, expect=45, batch="h", write=22))
        vacuous = await roles.client.run(rows_task("vacuous", db, expect=45, batch="vac"))
        blocked = await roles.client.run(
            rows_task(
                "blocked",
                db,
                expect=3,
                batch="bl",
                write=3,
                report="Could not finish: blocked on the reviewer's sign-off.",
            )
        )
    assert _read_back(swallowed)[0].result == "empty"
    assert _read_back(half)[0].result == "mismatch"
    assert _read_back(vacuous)[0].result == "vacuous"
    assert _read_back(blocked)[0].result == "pass"
    for receipt in (swallowed, half, vacuous, blocked):
        assert receipt.verdict not in ("verified", "reconciled"), receipt.task_id
        await _verdicts_match_checker(roles, receipt)
    assert any(f.startswith("DOD-7") for f in blocked.landed.findings)  # type: ignore[union-attr]
    # A mismatch settles; it is never retried: one act run, one read after it.
    assert act_runs(db, "half") == [(1, "half")]


async def test_publish_saves_then_errors_reconciles_one_copy(
    temporal_dev: str, tmp_path: Path, db: Path, site: Site
) -> None:
    """The DoD's seed case (DOD-10): the API saves the post, then answers 500. The workflow
    reads back before any retry, finds the post, and settles without publishing again."""
    site.save_then_fail = 1
    async with _roles(temporal_dev, tmp_path, db, site) as roles:
        receipt = await roles.client.run(publish_task("pub-1", "pricing"))
    assert site.count("pricing") == 1
    assert site.publishes == 1
    assert receipt.verdict == "verified"
    assert receipt.landed is not None and receipt.landed.act_error  # type: ignore[attr-defined]
    await _verdicts_match_checker(roles, receipt)


async def test_failed_write_that_did_not_land_reruns_with_same_key(
    temporal_dev: str, tmp_path: Path, db: Path, site: Site
) -> None:
    async with _roles(temporal_dev, tmp_path, db, site) as roles:
        receipt = await roles.client.run(
            rows_task("rerun", db, expect=4, batch="r", write=4, fail="before", fail_attempts=1)
        )
    assert act_runs(db, "rerun") == [(1, "rerun"), (2, "rerun")]  # same idempotency key
    assert row_count(db, "r") == 4
    assert receipt.verdict == "verified"
    assert receipt.landed is not None and receipt.landed.attempt == 2


@pytest.mark.parametrize("pre_read", [True, False])
async def test_a_write_that_partly_landed_is_not_run_again(
    temporal_dev: str, tmp_path: Path, db: Path, site: Site, pre_read: bool
) -> None:
    """The act writes 2 of its 4 rows and errors: the read-back sees part of the outcome, so
    running the act again could write those 2 twice. It settles, not done, for a person to
    reconcile (DOD-10); only a read-back that shows nothing changed earns another attempt.
    Without a before-state only a read-back that finds nothing at all does."""
    task_id = f"partly-{pre_read}"
    task = rows_task(task_id, db, expect=4, batch="pl", write=2, fail="after", fail_attempts=1)
    task["pre_read"] = pre_read
    async with _roles(temporal_dev, tmp_path, db, site, task_may_skip_pre_read=True) as roles:
        receipt = await roles.client.run(task)
    assert act_runs(db, task_id) == [(1, task_id)]
    assert row_count(db, "pl") == 2
    assert receipt.verdict != "verified"
    assert _read_back(receipt)[0].result == "mismatch"
    assert receipt.landed is not None
    assert any("was not run again" in f for f in receipt.landed.findings)


async def test_probe_error_rereads_then_passes_and_persistent_error_is_not_done(
    temporal_dev: str, tmp_path: Path, db: Path, site: Site
) -> None:
    async with _roles(temporal_dev, tmp_path, db, site) as roles:
        site.count_unavailable = 2  # the pre-read errors once, the first after-read once
        ok = await roles.client.run(publish_task("flaky", "flaky"))
        assert ok.verdict == "verified"
        reads_before = site.count_reads
        site.count_unavailable = 100
        down = await roles.client.run(publish_task("down", "down"))
    assert ok.verdict == "verified"
    assert down.verdict != "verified"
    assert _read_back(down)[0].result == "probe-error"
    # Bounded: verify_attempts (3) reads before and 3 after, then it settles.
    assert site.count_reads - reads_before == 6


async def test_a_changed_page_with_the_same_value_is_not_published_again(
    temporal_dev: str, tmp_path: Path, db: Path, site: Site
) -> None:
    """The publish saves, then errors. The value the plan reads (the first post's title) is as
    the pre-read found it, but the page it comes from changed (a second post): something landed,
    so the act is not run again (DOD-10), and the task is not done."""
    site.posts.append({"slug": "ev", "title": "Old", "key": "an-earlier-publish"})
    site.save_then_fail = 1
    task = publish_task("evidence", "ev")
    task["act"]["input"]["title"] = "New"
    task["proof_plan"][0]["probe"]["url"] = "/posts?slug=ev"
    task["proof_plan"][0]["expect"] = {"type": "json_path", "path": "$[0].title", "value": "New"}
    async with _roles(temporal_dev, tmp_path, db, site) as roles:
        receipt = await roles.client.run(task)
    assert site.publishes == 1 and site.count("ev") == 2
    assert receipt.verdict != "verified"
    assert receipt.landed is not None
    assert any("was not run again" in f for f in receipt.landed.findings), receipt.landed.findings


async def test_a_mismatch_is_settled_not_read_again(
    temporal_dev: str, tmp_path: Path, db: Path, site: Site
) -> None:
    """Only "nothing was observed" is worth another read: a read-back that found the wrong state
    (a second copy of the post) is the answer, settled at once."""
    site.posts.append({"slug": "dup", "title": "", "key": "an-earlier-publish"})
    task = publish_task("dup", "dup")
    task["pre_read"] = False  # without a before-state the count is absolute: 2 copies, not 1
    async with _roles(temporal_dev, tmp_path, db, site, task_may_skip_pre_read=True) as roles:
        reads = site.count_reads
        receipt = await roles.client.run(task)
    assert _read_back(receipt)[0].result == "duplicated"  # a count above the expected one
    assert receipt.verdict != "verified"
    assert site.count_reads - reads == 1 and site.publishes == 1


async def test_same_task_id_twice_acts_once(
    temporal_dev: str, tmp_path: Path, db: Path, site: Site
) -> None:
    async with _roles(temporal_dev, tmp_path, db, site) as roles:
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


async def _at_step(handle: landed.TaskHandle, step: str) -> Progress:
    """Poll the task's progress query until it reports ``step``; fail after 10 s, so a test
    that means to act during that step never acts during another."""
    seen: list[str] = []

    async def at_step() -> Progress | None:
        progress = await handle.progress()
        seen.append(progress.step)
        return progress if progress.step == step else None

    try:
        return await until(f"the task reaching step {step!r}", at_step, timeout=10)
    except AssertionError as err:
        raise AssertionError(f"{err}; last step seen {seen[-1:]!r}") from None


async def _held_in_act(
    roles: Roles, db: Path, gate: Path, task_id: str, batch: str, pre_read: bool = True
) -> tuple[landed.TaskHandle, Progress]:
    """A one-row task whose act waits for ``gate``: started, and seen in its act step."""
    task = rows_task(task_id, db, expect=1, batch=batch, write=1, wait_for_file=str(gate))
    task["pre_read"] = pre_read
    handle = await roles.client.start(task)
    return handle, await _at_step(handle, "act")


async def test_queries_and_search_attributes(
    temporal_dev: str, tmp_path: Path, db: Path, site: Site
) -> None:
    gate = tmp_path / "go"
    async with _roles(temporal_dev, tmp_path, db, site) as roles:
        handle, progress = await _held_in_act(roles, db, gate, "query-1", "q")
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


async def test_a_task_temporal_forgot_is_answered_from_the_ledger_not_acted_again(
    temporal_dev: str, tmp_path: Path, db: Path, site: Site
) -> None:
    """Once Temporal drops a closed run (its retention), the same task id can start a new run;
    a second run is started here directly, as that would. The runner finds the receipt in the
    ledger and hands it back without acting."""
    async with _roles(temporal_dev, tmp_path, db, site) as roles:
        task = rows_task("forgotten", db, expect=2, batch="fg", write=2)
        first = await roles.client.run(task)
        again = await _second_run(roles, task)
        async with await roles.ledger() as ledger:
            stored = await ledger.get("forgotten")
    assert act_runs(db, "forgotten") == [(1, "forgotten")]
    assert row_count(db, "fg") == 2
    assert first.verdict == "verified"
    assert stored == [again]
    assert again.landed is not None and first.landed is not None
    assert again.landed.run_id == first.landed.run_id  # type: ignore[attr-defined]
    assert canonical_json(again) == canonical_json(first)  # the ledger's form of the same


async def test_receipt_and_status_of_a_task_temporal_forgot_come_from_the_ledger(
    temporal_dev: str, tmp_path: Path, db: Path, site: Site
) -> None:
    """After Temporal drops a settled run, the client asks a runner for the ledger's receipt
    (the client holds no ledger credentials); an id the ledger does not know either is still
    NOT_FOUND, and nothing is acted for either."""
    async with _roles(temporal_dev, tmp_path, db, site) as roles:
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
    async with _roles(temporal_dev, tmp_path, db, site) as roles:
        await _held_in_act(roles, db, gate, "cut-off", "co")
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
    async with _roles(temporal_dev, tmp_path, db, site) as roles:
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
    async with _roles(temporal_dev, tmp_path, db, site, task_may_skip_pre_read=True) as roles:
        await _held_in_act(roles, db, gate, task_id, task_id, pre_read=pre_read)
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
        again = await asyncio.wait_for(_second_run(roles, task), 60)
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


async def _reset_to_last_workflow_task(roles: Roles, wid: str) -> str:
    """What `temporal workflow reset --type LastWorkflowTask` does; the new run's id."""
    handle = roles.temporal.get_workflow_handle(wid)
    history = await handle.fetch_history()
    last = [
        e.event_id
        for e in history.events
        if e.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED
    ][-1]
    desc = await handle.describe()
    reset = await roles.temporal.workflow_service.reset_workflow_execution(
        ResetWorkflowExecutionRequest(
            namespace=roles.temporal.namespace,
            workflow_execution=WorkflowExecution(workflow_id=wid, run_id=desc.run_id),
            reason="an operator reset it to its last workflow task",
            workflow_task_finish_event_id=last,
            request_id=str(uuid.uuid4()),
        )
    )
    return reset.run_id


async def _result_of_run(roles: Roles, wid: str, run_id: str) -> landed.Receipt:
    """The receipt one run of the task ends with, within 60 s (a stuck run fails the test)."""
    handle = roles.temporal.get_workflow_handle(wid, run_id=run_id, result_type=landed.Receipt)
    return await asyncio.wait_for(handle.result(), 60)


async def test_a_run_reset_after_it_settled_ends_with_the_ledgers_receipt(
    temporal_dev: str, tmp_path: Path, db: Path, site: Site
) -> None:
    async with _roles(temporal_dev, tmp_path, db, site) as roles:
        first = await roles.client.run(rows_task("reset-done", db, expect=1, batch="rd", write=1))
        new_run = await _reset_to_last_workflow_task(roles, "reset-done")
        again = await _result_of_run(roles, "reset-done", new_run)
        status = await roles.client.status("reset-done")
        async with await roles.ledger() as ledger:
            stored = await ledger.get("reset-done")
    assert act_runs(db, "reset-done") == [(1, "reset-done")]
    assert first.verdict == "verified" and status.settled and status.verdict == "verified"
    assert [canonical_json(r) for r in stored] == [canonical_json(first)] == [canonical_json(again)]


async def test_a_run_reset_after_a_retried_act_replays_its_reads_and_settles(
    temporal_dev: str, tmp_path: Path, db: Path, site: Site
) -> None:
    """Reset to the workflow task after the second act attempt: the new run replays the
    reconciling read signed for the run that asked for it, takes the branch the history took,
    and settles (it does not stick on a workflow task that fails again and again)."""
    async with _roles(temporal_dev, tmp_path, db, site) as roles:
        task = rows_task("reset-retry", db, expect=1, batch="rr", write=1)
        task["act"]["input"].update({"fail_attempts": 1, "fail": "before"})
        task["retry"] = {"act_attempts": 2, "verify_backoff": 0.2}
        first = await roles.client.run(task)
        new_run = await _reset_to_last_workflow_task(roles, "reset-retry")
        again = await _result_of_run(roles, "reset-retry", new_run)
    assert act_runs(db, "reset-retry") == [(1, "reset-retry"), (2, "reset-retry")]
    assert first.verdict == "verified" and first.landed is not None and first.landed.attempt == 2
    assert canonical_json(again) == canonical_json(first)


@pytest.mark.parametrize("pre_read", [True, False])
async def test_a_reset_that_schedules_the_act_again_does_not_act_twice(
    temporal_dev: str, tmp_path: Path, db: Path, site: Site, pre_read: bool
) -> None:
    """An operator resets a task to its last workflow task while the act runs: the new run
    schedules the act again, and its claim finds the old run's, so it does not act."""
    gate = tmp_path / "go"
    wid = f"reset-mid-{pre_read}"
    async with _roles(temporal_dev, tmp_path, db, site, task_may_skip_pre_read=True) as roles:
        await _held_in_act(roles, db, gate, wid, wid, pre_read=pre_read)
        await until("the actor starting the act", lambda: act_runs(db, wid), timeout=10)
        reset_run = await _reset_to_last_workflow_task(roles, wid)
        gate.touch()  # the old run's act finishes its write
        receipt = await _result_of_run(roles, wid, reset_run)
    assert act_runs(db, wid) == [(1, wid)]
    assert row_count(db, wid) == 1
    assert receipt.verdict == "planned" and receipt.landed is not None
    assert any("closed without settling" in f for f in receipt.landed.findings)


async def test_the_recorded_reset_whose_claim_and_act_fell_apart_replays_refused() -> None:
    """The race as it ran (recorded under load): the old run's claim marker sat in its first
    workflow task and its act in the second; the reset to the second kept the claim, the reset
    run scheduled the act on it, the actor refused it, and the run read back and settled. The
    committed history replays in both sandboxes: a change to the commands on that path (a claim
    step where the history scheduled the act, another step after the refusal) fails here; what
    the refusal grades to is tested live above."""
    path = HISTORIES / "agent_task_reset_split_refused.json"
    history = WorkflowHistory.from_json("reset-mid-False", json.loads(path.read_text()))
    kinds = [e.event_type for e in history.events]
    marker = kinds.index(EventType.EVENT_TYPE_MARKER_RECORDED)
    act = kinds.index(EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED)
    assert EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED in kinds[marker:act]  # the reset
    refused = next(
        e.activity_task_failed_event_attributes.failure
        for e in history.events
        if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_FAILED
    )
    assert refused.application_failure_info.type == "ClaimOfAnotherRun"
    await _replays_as_recorded([history])


class _WithOutbound(Interceptor):
    """Puts ``outbound`` between the runner's workflow code and the SDK."""

    def __init__(self, outbound: type[WorkflowOutboundInterceptor]) -> None:
        self.outbound = outbound

    def workflow_interceptor_class(
        self, input: WorkflowInterceptorClassInput
    ) -> type[WorkflowInboundInterceptor]:
        outbound = self.outbound

        class _Inbound(WorkflowInboundInterceptor):
            def init(self, next: WorkflowOutboundInterceptor) -> None:
                super().init(outbound(next))

        return _Inbound


def _act_under_claim_of(run: str) -> Interceptor:
    """Schedules every act as a run reset from ``run`` does when it replays that run's claim
    and Temporal cannot replay the act (the claim's marker and the act sat in different
    workflow tasks, and the reset kept only the first): under ``run``'s claim."""

    class _Outbound(WorkflowOutboundInterceptor):
        def start_activity(self, input: StartActivityInput) -> ActivityHandle[Any]:
            act = input.args[0] if input.activity == ACT_ACTIVITY else None
            if isinstance(act, ActInput):
                input.args = [act.model_copy(update={"claimed_for": run})]
            return super().start_activity(input)

    return _WithOutbound(_Outbound)


@pytest.mark.parametrize("pre_read", [True, False])
async def test_an_act_under_the_claim_of_the_run_reset_from_runs_nothing(
    temporal_dev: str, tmp_path: Path, db: Path, site: Site, pre_read: bool
) -> None:
    """DOD-10 across a reset: the act a reset run schedules on the claim it replayed from the
    old run is refused by the actor before it runs; the task reads back and settles as one
    whose other run may have acted (not verified, the run named), never acting twice."""
    task = rows_task(f"claim-of-old-{pre_read}", db, expect=1, batch=f"co{pre_read}", write=1)
    task["pre_read"] = pre_read
    async with _roles(
        temporal_dev,
        tmp_path,
        db,
        site,
        interceptors=(_act_under_claim_of("run-reset-from"),),
        task_may_skip_pre_read=True,
    ) as roles:
        receipt = await roles.client.run(task)
        async with await roles.ledger() as ledger:
            stored = await ledger.get(task["task_id"])
    assert act_runs(db, task["task_id"]) == []
    assert row_count(db, f"co{pre_read}") == 0
    assert receipt.verdict == "planned" and receipt.landed is not None
    # The finding names the run whose claim the act carried, not this run or another.
    named = [f for f in receipt.landed.findings if "closed without settling" in f]
    assert named and all("run run-reset-from of this task id" in f for f in named)
    assert [canonical_json(r) for r in stored] == [canonical_json(receipt)]


def _on_local_activity(
    hook: Callable[
        [StartLocalActivityInput, Callable[[StartLocalActivityInput], ActivityHandle[Any]]],
        ActivityHandle[Any],
    ],
) -> Interceptor:
    """Starts each local activity of the runner's workflows through ``hook(input, start)``,
    where ``start`` starts it as the workflow asked."""

    class _Outbound(WorkflowOutboundInterceptor):
        def start_local_activity(self, input: StartLocalActivityInput) -> ActivityHandle[Any]:
            return hook(input, super().start_local_activity)

    return _WithOutbound(_Outbound)


def _claim_then_timer(step: str) -> Interceptor:
    """A workflow task boundary between the step that claims the first act (the plan, or the
    claim step after a pre-read) and the act: a short timer once it has answered. Its recorded
    claim then sits in an earlier workflow task than the act, as it does when Temporal completes
    that workflow task early (seen with a progress query arriving while the plan ran)."""

    def hook(
        input: StartLocalActivityInput,
        start: Callable[[StartLocalActivityInput], ActivityHandle[Any]],
    ) -> ActivityHandle[Any]:
        handle = start(input)
        if input.activity != step:
            return handle

        async def then_a_timer() -> Any:
            answer = await handle
            await workflow.sleep(timedelta(milliseconds=10))
            return answer

        return asyncio.ensure_future(then_a_timer())  # type: ignore[return-value]

    return _on_local_activity(hook)


# The plan claimed the first act itself when nothing ran between them; since the fleet gate
# (GOV-4) runs there, the first act is claimed by the claim step, after the gate, in both cases.
@pytest.mark.parametrize(("pre_read", "step"), [(False, CLAIM_ACTIVITY), (True, CLAIM_ACTIVITY)])
async def test_a_reset_keeping_the_claim_but_not_the_act_claims_again(
    temporal_dev: str, tmp_path: Path, db: Path, site: Site, pre_read: bool, step: str
) -> None:
    """The first act was claimed in an earlier workflow task than the one that scheduled it; an
    operator resets to that later one while the act runs. The new run keeps the recorded claim
    (made for the old run), so it claims again as itself, finds the old run's claim, and does
    not act."""
    gate = tmp_path / "go"
    wid = f"reset-split-{pre_read}"
    async with _roles(
        temporal_dev,
        tmp_path,
        db,
        site,
        interceptors=(_claim_then_timer(step),),
        task_may_skip_pre_read=True,
    ) as roles:
        await _held_in_act(roles, db, gate, wid, wid, pre_read=pre_read)
        await until("the actor starting the act", lambda: act_runs(db, wid), timeout=10)
        history = await roles.temporal.get_workflow_handle(wid).fetch_history()
        kinds = [e.event_type for e in history.events]
        act = len(kinds) - 1 - kinds[::-1].index(EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED)
        marker = max(
            i for i in range(act) if kinds[i] == EventType.EVENT_TYPE_MARKER_RECORDED
        )  # the claim's: the last one before the act
        between = kinds[marker:act].count(EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED)
        reset_run = await _reset_to_last_workflow_task(roles, wid)
        gate.touch()  # the old run's act finishes its write
        receipt = await _result_of_run(roles, wid, reset_run)
        reset_history = await roles.temporal.get_workflow_handle(
            wid, run_id=reset_run
        ).fetch_history()
    assert between >= 1  # the setup: the claim and the act in different workflow tasks
    assert act_runs(db, wid) == [(1, wid)]
    assert row_count(db, wid) == 1
    assert receipt.verdict == "planned" and receipt.landed is not None
    assert any("closed without settling" in f for f in receipt.landed.findings)
    # The reset run's history (the old run's claim, the reset, the patch marker, the claim
    # again) replays as it ran, and so does the one committed for this flow.
    assert _CLAIM_AGAIN_PATCH in _patches(reset_history)
    name = f"reset_claim_again_{'pre_read' if pre_read else 'lean'}"
    _record_history(name, reset_history, TIMER_HISTORIES)
    committed = WorkflowHistory.from_json(
        name, json.loads((TIMER_HISTORIES / f"agent_task_{name}.json").read_text())
    )
    assert _CLAIM_AGAIN_PATCH in _patches(committed)
    await _replays_as_recorded([reset_history], _claim_then_timer(step))
    # The committed lean fixture was recorded before the fleet gate, when the plan claimed.
    recorded = CLAIM_ACTIVITY if pre_read else PLAN_ACTIVITY
    await _replays_as_recorded([committed], _claim_then_timer(recorded))


async def test_a_reset_keeping_a_second_attempts_claim_but_not_its_act_claims_again(
    temporal_dev: str, tmp_path: Path, db: Path, site: Site
) -> None:
    """The same for the act's second attempt (the first raised before writing, the read-back
    found nothing, the act runs again): the reset run held the old run's answers for both
    attempts, acts on the first's as the old run did, and claims the second again."""
    gate = tmp_path / "go"
    wid = "reset-split-second"
    task = rows_task(
        wid,
        db,
        expect=1,
        batch=wid,
        write=1,
        fail="before",
        fail_attempts=1,
        wait_for_file=str(gate),
    )
    task["pre_read"] = False
    async with _roles(
        temporal_dev,
        tmp_path,
        db,
        site,
        interceptors=(_claim_then_timer(CLAIM_ACTIVITY),),
        task_may_skip_pre_read=True,
    ) as roles:
        await roles.client.start(task)
        await until("the act's second attempt", lambda: len(act_runs(db, wid)) == 2, timeout=20)
        assert act_runs(db, wid) == [(1, wid), (2, wid)]  # the second attempt waits at the gate
        reset_run = await _reset_to_last_workflow_task(roles, wid)
        gate.touch()
        receipt = await _result_of_run(roles, wid, reset_run)
        reset_history = await roles.temporal.get_workflow_handle(
            wid, run_id=reset_run
        ).fetch_history()
    assert act_runs(db, wid) == [(1, wid), (2, wid)]
    assert row_count(db, wid) == 1
    assert receipt.verdict == "planned" and receipt.landed is not None
    assert any("closed without settling" in f for f in receipt.landed.findings)
    assert f"{_CLAIM_AGAIN_PATCH}-2" in _patches(reset_history)
    _record_history("reset_claim_again_second", reset_history, TIMER_HISTORIES)
    path = TIMER_HISTORIES / "agent_task_reset_claim_again_second.json"
    committed = WorkflowHistory.from_json(wid, json.loads(path.read_text()))
    assert f"{_CLAIM_AGAIN_PATCH}-2" in _patches(committed)
    await _replays_as_recorded([reset_history, committed], _claim_then_timer(CLAIM_ACTIVITY))


async def test_a_probe_that_keeps_erroring_is_not_read_again_past_the_time_cap(
    temporal_dev: str, tmp_path: Path, db: Path, site: Site
) -> None:
    """GOV-4: the wait before reading a probe-error again (12 s here) would end past the
    3 s cap; the task settles by the cap with the reading not observed, not after the wait."""
    site.count_unavailable = 100
    task = publish_task("backoff-cap", "bc")
    task["time_cap"] = 3
    task["retry"] = {"verify_backoff": 12, "verify_attempts": 2}
    async with _roles(temporal_dev, tmp_path, db, site) as roles:
        began = time.monotonic()
        receipt = await asyncio.wait_for(roles.client.run(task), 60)
        took = time.monotonic() - began
    assert took < 10, took
    assert receipt.verdict not in ("verified", "reconciled")
    assert all(p.result == "probe-error" for p in _read_back(receipt))


def _without_a_verifier(temporal_dev: str, tmp_path: Path, db: Path) -> Any:
    """The roles, with the runner reading from a verifier queue nobody polls."""
    return run_roles(
        temporal_dev,
        tmp_path,
        credentials={"rows-db": f"sqlite:///{db}"},
        runner={"verifier_task_queue": f"nobody-{uuid.uuid4().hex[:8]}"},
        check_roles=False,
    )


async def test_reads_wait_for_a_verifier_one_read_past_the_cap_in_all(
    temporal_dev: str, tmp_path: Path, db: Path
) -> None:
    """No verifier polls: the pre-read waits until the cap plus one read's time; the read-back
    after it gets what is left of that, not another read's time of its own."""
    async with _without_a_verifier(temporal_dev, tmp_path, db) as roles:
        task = {
            **rows_task("no-verifier-cap", db, expect=1, batch="nvc", write=1),
            "time_cap": 2,
            "timeouts": {"verify": 6},
        }
        began = time.monotonic()
        receipt = await asyncio.wait_for(roles.client.run(task), 60)
        took = time.monotonic() - began
    assert 7 < took < 12, took  # 2 + 6 (+1 for the read-back), not 2 + 6 + 6
    assert receipt.verdict not in ("verified", "reconciled")
    assert act_runs(db, "no-verifier-cap") == []  # the cap came before the act


async def test_the_first_act_is_claimed_by_the_plan_unless_a_pre_read_comes_between(
    temporal_dev: str, tmp_path: Path, db: Path, site: Site
) -> None:
    """Each act is claimed in the workflow task that schedules it: by a claim step of its own,
    after the fleet gate (GOV-4) that now runs between the plan and the first act; the plan
    claimed it itself when nothing ran between them, and still does for a run from before."""
    markers: dict[bool, int] = {}
    async with _roles(temporal_dev, tmp_path, db, site, task_may_skip_pre_read=True) as roles:
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
    async with _roles(temporal_dev, tmp_path, db, site) as roles:
        task = publish_task("early", "early-post")
        site.count_delay_s = 2.0  # a slow system of record holds the pre-read
        handle = await roles.client.start(task)
        await _at_step(handle, "pre-read")
        await roles.temporal.get_workflow_handle("early").terminate("an operator stopped it")
        site.count_delay_s = 0.0
        again = await asyncio.wait_for(_second_run(roles, task), 60)
    assert site.count("early-post") == 1
    assert again.verdict == "verified", again.landed


async def test_a_task_cancelled_mid_act_reads_back_and_settles_once(
    temporal_dev: str, tmp_path: Path, db: Path, site: Site
) -> None:
    """Cancelled while its act runs: the act is not run again, the workflow waits for the
    actor to stop (its thread finishes the write), reads back and settles one receipt."""
    gate = tmp_path / "go"
    task = rows_task("cancel-act", db, expect=2, batch="ca", write=2, wait_for_file=str(gate))
    task["timeouts"] = {"act_heartbeat": 2.0}  # the cancel reaches the actor within ~2 s
    async with _roles(temporal_dev, tmp_path, db, site) as roles:
        handle = await roles.client.start(task)
        # The actor has started the act (it logs itself, then waits).
        await until("the actor starting the act", lambda: act_runs(db, "cancel-act"), timeout=20)
        await roles.temporal.get_workflow_handle("cancel-act").cancel()
        await asyncio.sleep(3.0)
        gate.touch()  # the cancelled act's thread still writes: the read-back must see it
        receipt = await handle.result()
        async with await roles.ledger() as ledger:
            stored = await ledger.get("cancel-act")
        status = await roles.client.status("cancel-act")
        history = await roles.temporal.get_workflow_handle("cancel-act").fetch_history()
    _record_history("cancel", history)  # replayed with the committed ones below
    assert act_runs(db, "cancel-act") == [(1, "cancel-act")]
    assert row_count(db, "ca") == 2
    assert receipt.verdict == "verified", receipt.landed
    assert receipt.landed is not None
    assert any("cancelled while it ran" in f for f in receipt.landed.findings)
    assert [canonical_json(r) for r in stored] == [canonical_json(receipt)]
    assert status.settled and status.execution == "COMPLETED"


async def test_a_task_cancelled_in_its_pre_read_still_learns_of_a_lost_runs_act(
    temporal_dev: str, tmp_path: Path, db: Path
) -> None:
    """The ledger holds another run's claim on this task id (a run that was about to act and
    closed unsettled, then forgotten by Temporal). This run is cancelled in its pre-read, before
    its own claim step: its receipt says the other run may have acted (DOD-10), not that
    nothing was done, and its read-back cannot make it verified."""
    make_rows_db(db)
    task = rows_task("cancel-lost", db, expect=1, batch="cl", write=1)
    async with _relayed(temporal_dev, tmp_path, db, "slow-before") as roles:
        async with await open_ledger(roles.ledger_url) as ledger:  # what the lost run left
            digest = spec_digest(landed.TaskSpec.model_validate(task))
            await ledger.claim("cancel-lost", "lost-run", 1, digest)
        handle = await roles.client.start(task)
        await _at_step(handle, "pre-read")
        await roles.temporal.get_workflow_handle("cancel-lost").cancel()
        receipt = await asyncio.wait_for(handle.result(), 60)
        async with await roles.ledger() as ledger:
            stored = await ledger.get("cancel-lost")
    assert act_runs(db, "cancel-lost") == []
    assert receipt.claimed_status != "superseded", receipt
    assert receipt.verdict == "planned" and receipt.landed is not None
    findings = " ".join(receipt.landed.findings)
    assert "run lost-run of this task id was about to act" in findings, findings
    assert [canonical_json(r) for r in stored] == [canonical_json(receipt)]


async def test_progress_shows_the_acts_rung_while_the_read_back_is_pending(
    temporal_dev: str, tmp_path: Path, db: Path
) -> None:
    """Between the act's report and the verdict, progress is the grade of what is known so far.
    The act's word alone is an assertion (P1) that proves no rung, so the rung stays planned
    while the read-back is pending; the read-back then proves it verified."""
    make_rows_db(db)
    gate = tmp_path / "read-back-go"
    async with _relayed(temporal_dev, tmp_path, db, "held-after", gate) as roles:
        handle = await roles.client.start(rows_task("rung-1", db, expect=2, batch="rg", write=2))
        pending = await _at_step(handle, "verify")
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


async def test_a_task_cancelled_before_its_act_settles_superseded(
    temporal_dev: str, tmp_path: Path, db: Path
) -> None:
    """Cancelled during its pre-read: the act never runs, and the task still settles, as
    superseded (replaced before it ran), with nothing claimed done."""
    make_rows_db(db)
    async with _relayed(temporal_dev, tmp_path, db, "slow-before") as roles:
        handle = await roles.client.start(
            rows_task("cancel-early", db, expect=2, batch="ce", write=2)
        )
        await _at_step(handle, "pre-read")
        await roles.temporal.get_workflow_handle("cancel-early").cancel()
        receipt = await handle.result()
        async with await roles.ledger() as ledger:
            stored = await ledger.get("cancel-early")
        status = await roles.client.status("cancel-early")
    assert act_runs(db, "cancel-early") == []
    assert receipt.claimed_status == "superseded"
    assert receipt.verdict not in ("verified", "reconciled")
    assert receipt.landed is not None
    assert any("cancelled while it ran" in f for f in receipt.landed.findings)
    assert status.settled and status.execution == "COMPLETED"
    assert [canonical_json(r) for r in stored] == [canonical_json(receipt)]


async def test_invalid_spec_rejected_and_no_probe_never_verified(
    temporal_dev: str, tmp_path: Path, db: Path, site: Site
) -> None:
    async with _roles(temporal_dev, tmp_path, db, site) as roles:
        with pytest.raises(landed.TaskSpecError, match="owner"):
            await roles.client.start({"task_id": "bad", "outcome": "x", "act": {"name": "x"}})
        task = rows_task("no-probe", db, expect=1, batch="np", write=1)
        task["proof_plan"] = []
        handle = await roles.client.start(task)
        assert any("can never reach verified" in w for w in handle.warnings)
        receipt = await handle.result()
        history = await roles.temporal.get_workflow_handle("no-probe").fetch_history()
        scheduled = [
            e.activity_task_scheduled_event_attributes.activity_type.name
            for e in history.events
            if e.HasField("activity_task_scheduled_event_attributes")
        ]
        # No read-back to reconcile with: a failed write is never run again (it may have landed).
        blind = rows_task("no-probe-fail", db, expect=1, batch="npf", fail="after", fail_attempts=9)
        blind["proof_plan"] = []
        blind_receipt = await roles.client.run(blind)
        # An act the actor does not know: refused before it starts; started anyway, blocked.
        nope = {**rows_task("unknown-act", db, expect=1, batch="u"), "act": {"name": "nope"}}
        with pytest.raises(landed.TaskRefused, match="no act named 'nope'"):
            await roles.client.start(nope)
        unchecked = landed.Client(
            roles.temporal, task_queue=roles.queues["runner"], check_roles=False
        )
        unknown = await unchecked.run(nope)
    assert receipt.verdict != "verified" and row_count(db, "np") == 1
    # Nothing to read back: no verify step is asked for (none would wait on a verifier).
    # (the runner's fleet gate, GOV-4, is read before the act)
    assert scheduled == ["landed.fleet_gate", "landed.act"], scheduled
    assert blind_receipt.verdict == "failed"
    assert act_runs(db, "no-probe-fail") == [(1, "no-probe-fail")]
    assert unknown.verdict == "blocked"
    assert "no act named 'nope'" in (unknown.report or "")


def _record_history(name: str, history: WorkflowHistory, folder: Path = HISTORIES) -> None:
    """With LANDED_RECORD_HISTORIES=1, write ``history`` as the committed fixture ``name``.

    Only after a deliberate change to the workflow's commands: record the fixtures again (and
    drain running tasks before such a change is deployed). Each fixture is written by the test
    that makes its history: run the whole file with the variable set, not one test.
    """
    if os.environ.get("LANDED_RECORD_HISTORIES") == "1":
        text = json.dumps(json.loads(history.to_json()), indent=1) + "\n"
        (folder / f"agent_task_{name}.json").write_text(text)


async def test_replay_recorded_histories(
    temporal_dev: str, tmp_path: Path, db: Path, site: Site
) -> None:
    """Histories recorded now replay with the current workflow code (and so does the
    committed one): a change that breaks determinism fails here."""
    site.save_then_fail = 1
    async with _roles(temporal_dev, tmp_path, db, site) as roles:
        await roles.client.run(rows_task("replay-ok", db, expect=2, batch="rp", write=2))
        await roles.client.run(publish_task("replay-dod10", "rp"))
        await roles.client.run(
            rows_task(
                "replay-rerun", db, expect=1, batch="rr", write=1, fail="before", fail_attempts=1
            )
        )
        # A malformed report after the write: read back as an unknown write (DOD-10).
        bad = rows_task("replay-badreport", db, expect=3, batch="rb")
        bad["act"] = {"name": "test.rows_bad_report", "input": {"batch": "rb"}}
        await roles.client.run(bad)
        # Reads that observed nothing, read again after a backoff timer (before and after).
        site.count_unavailable = 2
        await roles.client.run(publish_task("replay-reread", "rq"))
        histories = [
            await roles.temporal.get_workflow_handle(wid).fetch_history()
            for wid in (
                "replay-ok",
                "replay-dod10",
                "replay-rerun",
                "replay-badreport",
                "replay-reread",
            )
        ]
    _record_history("dod10", histories[1])
    _record_history("rerun", histories[2])
    _record_history("badreport", histories[3])
    _record_history("reread", histories[4])
    committed = sorted(HISTORIES.glob("*.json"))
    assert committed, "tests/histories/ holds at least one recorded AgentTask history"
    for path in committed:
        histories.append(WorkflowHistory.from_json(path.stem, json.loads(path.read_text())))
    await _replays_as_recorded(histories)


def _patches(history: WorkflowHistory) -> list[str]:
    """The patch ids a history's patch markers record."""
    ids = []
    for event in history.events:
        marker = event.marker_recorded_event_attributes
        if (
            event.HasField("marker_recorded_event_attributes")
            and marker.marker_name == "core_patch"
        ):
            for payloads in marker.details.values():
                for payload in payloads.payloads:
                    ids.append(json.loads(payload.data).get("id"))
    return ids


async def _replays_as_recorded(
    histories: list[WorkflowHistory], *interceptors: Interceptor
) -> None:
    """Each history replays without a nondeterminism error, in the shared and strict sandbox."""
    shared = Replayer(workflows=[AgentTask], plugins=[landed_plugin()], interceptors=interceptors)
    # Workers share the workflow module across runs; replayed with it re-imported under the
    # SDK's restricted standard library, a nondeterministic call in it fails here.
    strict = Replayer(
        workflows=[AgentTask],
        data_converter=pydantic_data_converter,
        workflow_runner=strict_workflow_runner(),
        interceptors=interceptors,
    )
    for replayer in (shared, strict):
        for history in histories:
            result = await replayer.replay_workflow(history, raise_on_replay_failure=False)
            assert result.replay_failure is None, (history.workflow_id, result.replay_failure)


def _record_step(action: str, query: str, params: list[Any], expect: int) -> dict[str, Any]:
    return {
        "action": action,
        "probe": {"kind": "record", "source": "rows-db", "query": query, "params": params},
        "expect": {"type": "count", "value": expect},
    }


async def test_every_plan_step_must_pass_for_verified(
    temporal_dev: str, tmp_path: Path, db: Path, site: Site
) -> None:
    """Two contracts: one duplicated (46 rows for a claim of 45), one that passes. The passing
    step alone must not make the task verified; the same plan with both passing does."""
    log_step = _record_step(
        "log the act", "select count(*) from act_log where task = ?", ["two-dup"], 1
    )
    dup = rows_task("two-dup", db, expect=45, batch="d", write=46)
    dup["proof_plan"].append(log_step)
    both = rows_task("two-ok", db, expect=3, batch="o", write=3)
    both["proof_plan"].append({**log_step, "probe": {**log_step["probe"], "params": ["two-ok"]}})
    async with _roles(temporal_dev, tmp_path, db, site) as roles:
        capped = await roles.client.run(dup)
        ok = await roles.client.run(both)
    assert [p.result for p in _read_back(capped)] == ["duplicated", "pass"]
    assert capped.verdict not in ("verified", "reconciled")
    assert capped.landed is not None
    assert capped.landed.meets_bar is False  # type: ignore[attr-defined]
    assert any("plan step #1" in f and "duplicated" in f for f in capped.landed.findings)  # type: ignore[attr-defined]
    # The checker reaches the same verdict from the receipt alone: a read-back that disagreed
    # leaves the passing one proving only part of the outcome.
    task = await _verdicts_match_checker(roles, capped)
    assert task["proof_level"] == "P2"
    assert task["meets_bar"] is False
    assert [p.result for p in _read_back(ok)] == ["pass", "pass"]
    assert ok.verdict == "verified"
    await _verdicts_match_checker(roles, ok)


async def test_reconcile_read_that_sees_nothing_never_reruns_the_act(
    temporal_dev: str, tmp_path: Path, db: Path, site: Site
) -> None:
    """DOD-10: the site saves the post and answers 500; the count endpoint is down for every
    read after. "Nothing observed" is not "not landed": one publish, settled not done."""
    site.save_then_fail = 1
    site.count_unavailable = 1000
    async with _roles(temporal_dev, tmp_path, db, site) as roles:
        receipt = await roles.client.run(publish_task("pub-unknown", "unknown"))
    assert site.publishes == 1
    assert site.count("unknown") == 1
    assert receipt.verdict == "failed"
    assert _read_back(receipt)[0].result == "probe-error"
    assert receipt.landed is not None and receipt.landed.attempt == 1
    findings = receipt.landed.findings  # type: ignore[attr-defined]
    assert any(f.startswith("DOD-10") and "reconcile" in f for f in findings), findings
    await _verdicts_match_checker(roles, receipt)


async def test_signed_readings_in_the_act_report_count_for_nothing(
    temporal_dev: str, tmp_path: Path, db: Path, site: Site
) -> None:
    """The actor copies verifier-signed passes (a pre-read, and an after-read from another run)
    into its own report next to a vacuous read-back: they stay the actor's assertions."""
    make_rows_db(db, preexisting=45, batch="sm")
    async with _roles(temporal_dev, tmp_path, db, site) as roles:
        key = KeyPair.load(roles.public_key.with_suffix(".key"))
        task = rows_task("smuggle", db, expect=45, batch="sm")
        contract = Contract.model_validate(task["proof_plan"][0])
        seen = Observation(
            outcome=Outcome.PASS,
            expectation="count(45)",
            kind="record",
            source="rows-db",
            observer=roles.identities["verifier"],
            observed_at=datetime.now(UTC),
            duration_ms=1.0,
            value=45,
        )
        item = proof_item(contract, seen, checked_by=roles.identities["verifier"])
        smuggled = [
            sign_proof(
                key, task_id="smuggle", attempt=1, proof=item, observation=seen, phase=p, run_id=r
            )
            for p, r in (("before", ""), ("after", "an-earlier-run"))
        ]
        task["act"]["input"]["artifacts"] = [s.model_dump(mode="json") for s in smuggled]
        receipt = await roles.client.run(task)
    # Only the verifier's own reading of this run is a read-back, and it saw a vacuous pass.
    assert [(p.result, p.checked_by) for p in _read_back(receipt)] == [
        ("vacuous", roles.identities["verifier"])
    ]
    cited = receipt.proof[:2]
    for proof in cited:
        assert proof.kind == "assertion"
        assert proof.checked_by == roles.identities["actor"]
        assert proof.landed is None
    assert receipt.verdict not in ("verified", "reconciled")
    await _verdicts_match_checker(roles, receipt)


@pytest.mark.parametrize("fail", [None, "after", "before", "timeout"])
async def test_a_reading_under_the_actors_identity_is_not_a_read_back(
    temporal_dev: str, tmp_path: Path, db: Path, site: Site, fail: str | None
) -> None:
    """_independent: when the verifier runs under the actor's identity, its readings are the
    actor grading itself (DOD-2): probe-error, never verified, though the rows landed. An act
    that raised or timed out leaves no report naming its actor; the identity that failed the
    attempt (or named itself in the attempt's heartbeats) counts the same, and its "nothing
    landed" never runs the act again."""
    shared = {"actor": "same-box", "verifier": "same-box"}
    failing: dict[str, Any] = {"fail": fail, "fail_attempts": 1} if fail else {}
    if fail == "timeout":  # writes, then outlives the time cap while it beats
        failing = {"sleep_after_s": 6}
    async with run_roles(
        temporal_dev,
        tmp_path,
        credentials={"rows-db": f"sqlite:///{db}", "site": site.url},
        sources={"rows-db": {"url": f"sqlite:///{db}"}},
        identities=shared,
    ) as roles:
        task = rows_task(f"self-graded-{fail}", db, expect=2, batch="sg", write=2, **failing)
        if fail == "timeout":
            task["time_cap"] = 3
        receipt = await roles.client.run(task)
    assert row_count(db, "sg") == (0 if fail == "before" else 2)
    assert act_runs(db, f"self-graded-{fail}") == [(1, f"self-graded-{fail}")]
    (proof,) = _read_back(receipt)
    assert proof.result == "probe-error"
    assert proof.checked_by == roles.identities["runner"]
    assert "can't grade itself" in str((proof.landed or {}).get("observation"))
    assert receipt.verdict not in ("verified", "reconciled")


async def test_a_verifier_nobody_runs_settles_not_done_by_the_time_cap(
    temporal_dev: str, tmp_path: Path, db: Path
) -> None:
    """No worker polls the verifier queue: the reads wait until the time cap plus one read's
    time, then count as not observed, and the task settles not done instead of hanging."""
    async with _without_a_verifier(temporal_dev, tmp_path, db) as roles:
        task = {
            **rows_task("no-verifier", db, expect=2, batch="nv", write=2),
            "time_cap": 2,
            "timeouts": {"verify": 1},
        }
        receipt = await asyncio.wait_for(roles.client.run(task), timeout=60)
        async with await roles.ledger() as ledger:
            stored = await ledger.get("no-verifier")
    (proof,) = _read_back(receipt)
    assert proof.result == "probe-error"
    observation = str((proof.landed or {}).get("observation"))
    assert "verify failed" in observation
    assert "no verifier answered on task queue 'nobody-" in observation, observation
    assert "landed worker verifier" in observation
    assert receipt.verdict != "verified"
    assert [r.verdict for r in stored] == [receipt.verdict]  # settled, once


class _Relay(VerifyActivities):
    """Answers on a queue the runner sends reads to, and asks the real verifier (its key, its
    sources) something other than the workflow asked: the signature on the answer is genuine."""

    def __init__(
        self,
        mode: str,
        registry: SourceRegistry,
        identity: str,
        key: KeyPair,
        gate: Path | None = None,
    ) -> None:
        super().__init__(registry, identity, key)
        self._mode = mode
        self._gate = gate

    @activity.defn(name=VERIFY_ACTIVITY)
    async def verify(self, inp: VerifyInput) -> VerifyOutput:
        if self._mode in ("forged-before", "unsigned-before", "forged-reconcile"):
            return await self._forge(inp)
        if self._mode in ("stale-reconcile", "stale-norequest"):
            return await self._stale(inp)
        if self._mode in (
            "dressed-up",
            "swapped-before-outcome",
            "keyless-signature",
            "probe-error-cover",
        ):
            return await self._dress_up(inp)
        if self._mode == "slow-before" and inp.phase == "before":
            for _ in range(600):  # alive (heartbeating) until the task is cancelled
                activity.heartbeat()
                await asyncio.sleep(0.1)
        if self._mode == "held-after":
            # The read-back waits for the test's go, then is asked of the verifier as is.
            while inp.phase == "after" and not (self._gate and self._gate.exists()):
                activity.heartbeat()
                await asyncio.sleep(0.05)
            return await self._verify(inp)
        if self._mode == "no-before":
            inp = inp.model_copy(update={"before": [None] * len(inp.indexes)})
        elif self._mode == "other-before":  # the before-state of a probe that reads 0
            if inp.phase == "before":
                other = RecordProbe(source="rows-db", query="select count(*) from rows where 0")
                zero = [c.model_copy(update={"probe": other}) for c in inp.contracts]
                inp = inp.model_copy(update={"contracts": zero})
        else:  # an easier expectation than the plan's
            easier = [c.model_copy(update={"expect": NonEmpty()}) for c in inp.contracts]
            inp = inp.model_copy(update={"contracts": easier, "before": []})
        return await self._verify(inp)

    async def _dress_up(self, inp: VerifyInput) -> VerifyOutput:
        """The read-back, asked of the real verifier and handed back with its signature intact.

        ``dressed-up`` asks under an easier expectation without the before-state, then shows
        the plan step's expectation and before value in the reading beside the signed one;
        ``swapped-before-outcome`` hands the verifier the task's own before value with its
        outcome changed from pass to mismatch; ``keyless-signature`` drops the key id from the
        signature; ``probe-error-cover`` shows "nothing observed" beside the easier signed pass
        (a probe-error is not held to its step, and the proof is what the receipt keeps)."""
        if inp.phase != "after":
            return await self._verify(inp)
        if self._mode == "swapped-before-outcome":
            swapped = [
                b.model_copy(update={"outcome": Outcome.MISMATCH}) if b is not None else None
                for b in (inp.before or [])
            ]
            return await self._verify(inp.model_copy(update={"before": swapped}))
        if self._mode == "keyless-signature":
            out = await self._verify(inp)
            readings = []
            for r in out.readings:
                landed_ext = dict(r.proof.landed or {})
                signature = dict(landed_ext.get("signature") or {})
                signature.pop("key_id", None)
                landed_ext["signature"] = signature
                proof = r.proof.model_copy(update={"landed": landed_ext})
                readings.append(r.model_copy(update={"proof": proof}))
            return out.model_copy(update={"readings": readings})
        easier = [c.model_copy(update={"expect": NonEmpty()}) for c in inp.contracts]
        out = await self._verify(inp.model_copy(update={"contracts": easier, "before": []}))
        befores = inp.before or [None] * len(inp.indexes)
        dressed = []
        for r, contract, before in zip(out.readings, inp.contracts, befores, strict=True):
            shown = r.observation.model_copy(
                update={
                    "expectation": label_for(contract.probe, contract.expect),
                    "before_value": before.value if before is not None else None,
                }
            )
            if self._mode == "probe-error-cover":
                shown = shown.model_copy(update={"outcome": Outcome.PROBE_ERROR, "value": None})
            dressed.append(r.model_copy(update={"observation": shown}))  # the proof untouched
        return out.model_copy(update={"readings": dressed})

    async def _forge(self, inp: VerifyInput) -> VerifyOutput:
        """The real verifier's reading with its value changed to "nothing there" (0 rows): the
        pre-read (``*-before``) or the first reading after a failed act (``forged-reconcile``).
        ``forged-before`` keeps the genuine signature (over the genuine value); the others
        re-state the signed observation too, without a signature."""
        out = await self._verify(inp)
        target = "before" if self._mode.endswith("-before") else "after"
        if inp.phase != target or (target == "after" and inp.read != 1) or self._forged:
            return out
        self._forged = target == "after"  # the reconcile read only; later reads are genuine
        forged = []
        for reading in out.readings:
            obs = reading.observation.model_copy(update={"value": 0, "outcome": Outcome.EMPTY})
            landed_ext = dict(reading.proof.landed or {})
            if self._mode != "forged-before":
                landed_ext.pop("signature", None)
                landed_ext["observation"] = obs.model_dump(mode="json")
            proof = reading.proof.model_copy(update={"result": "empty", "landed": landed_ext})
            forged.append(reading.model_copy(update={"observation": obs, "proof": proof}))
        return out.model_copy(update={"readings": forged})

    _forged = False
    _early: VerifyOutput | None = None

    async def _stale(self, inp: VerifyInput) -> VerifyOutput:
        """During the pre-read, also get the real verifier's signed "after" reading of this run
        and attempt (nothing is there yet: empty), and hand it back as the reconcile read.
        ``stale-norequest`` asks for it with no request id, as an older verifier signed."""
        if inp.phase == "before":
            out = await self._verify(inp)
            update: dict[str, object] = {
                "phase": "after",
                "before": [r.observation for r in out.readings],
            }
            if self._mode == "stale-norequest":
                update["request"] = ""
            early = inp.model_copy(update=update)
            self._early = await self._verify(early)
            return out
        if self._early is not None and not self._forged:
            self._forged = True
            return self._early
        return await self._verify(inp)


@pytest.mark.parametrize("mode", ["forged-before", "unsigned-before"])
async def test_a_forged_pre_read_cannot_make_rows_that_were_there_count(
    temporal_dev: str, tmp_path: Path, db: Path, mode: str
) -> None:
    """45 rows were there before; the act writes none. A worker on the verifier's queue answers
    the pre-read with "0 rows" (the genuine signature over the genuine 45, or no signature):
    the real verifier would then sign a change of 45 as a pass. The workflow holds the pre-read
    to the trusted verifier's signature, so the before-state is unknown and nothing is proven."""
    make_rows_db(db, preexisting=45, batch="pre")
    receipt, observation = await _through_relay(temporal_dev, tmp_path, db, mode, "pre", 45)
    (proof,) = _read_back(receipt)
    assert proof.result == "probe-error", proof
    assert receipt.verdict != "verified"
    assert "not a trusted verifier's" in observation, observation
    assert act_runs(db, f"relayed-{mode}") == [(1, f"relayed-{mode}")]


@pytest.mark.parametrize("mode", ["forged-reconcile", "stale-reconcile", "stale-norequest"])
async def test_a_false_reconcile_read_does_not_run_the_act_again(
    temporal_dev: str, tmp_path: Path, db: Path, mode: str
) -> None:
    """The act writes its 3 rows, then errors. The first read after it is answered with "0
    rows": unsigned (forged), or a genuine signed reading of this run and attempt taken before
    the act ran (stale). Taken at its word, the act would run again and write 3 more. Held to
    the verifier's signature, the forged one observed nothing, so the act is not run again
    (DOD-10); the stale one answers another read's request id (or none), so the read is asked
    again and sees the rows."""
    make_rows_db(db)
    receipt, _ = await _through_relay(
        temporal_dev, tmp_path, db, mode, "fr", 3, write=3, fail="after", fail_attempts=1
    )
    assert act_runs(db, f"relayed-{mode}") == [(1, f"relayed-{mode}")]
    assert row_count(db, "fr") == 3
    assert receipt.landed is not None
    if mode.startswith("stale-"):
        assert receipt.verdict == "verified"
    else:
        assert receipt.verdict != "verified"
        assert any("DOD-10" in f for f in receipt.landed.findings), receipt.landed.findings


async def test_submitting_another_task_under_a_running_task_id_is_refused(
    temporal_dev: str, tmp_path: Path, db: Path, site: Site
) -> None:
    """The same spec again attaches to the running task; another spec under its id is refused
    (its receipt would not be this task's), and nothing of it acts."""
    gate = tmp_path / "go"
    async with _roles(temporal_dev, tmp_path, db, site) as roles:
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
    async with _roles(temporal_dev, tmp_path, db, site) as roles:
        first = await roles.client.run(rows_task("reused", db, expect=2, batch="ru", write=2))
        other = rows_task("reused", db, expect=5, batch="ru2", write=5)
        with pytest.raises(landed.TaskIdReused, match="for a different task"):
            await _second_run(roles, other)  # the runner's plan refuses it, the handle says so
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
    async with _roles(temporal_dev, tmp_path, db, site) as roles:
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


async def _second_run(roles: Roles, task: dict[str, Any]) -> landed.Receipt:
    """Another run of the task's id, as Temporal allows once retention drops the first,
    awaited through landed's task handle."""
    handle: WorkflowHandle[Any, landed.Receipt] = await roles.temporal.start_workflow(
        "AgentTask",
        landed.TaskSpec.model_validate(task),
        id=task["task_id"],
        task_queue=roles.queues["runner"],
        id_reuse_policy=WorkflowIDReusePolicy.ALLOW_DUPLICATE,
        result_type=landed.Receipt,
    )
    return await landed.TaskHandle(handle, [], existing=False).result()


@asynccontextmanager
async def _relayed(
    temporal_dev: str, tmp_path: Path, db: Path, mode: str, gate: Path | None = None
) -> AsyncIterator[Roles]:
    """The roles, with the runner's reads sent to a _Relay(mode) in front of the verifier."""
    relay_queue = f"relay-{uuid.uuid4().hex[:8]}"
    sources = {"rows-db": {"url": f"sqlite:///{db}"}}
    async with run_roles(
        temporal_dev,
        tmp_path,
        credentials={"rows-db": f"sqlite:///{db}"},
        sources=sources,
        runner={"verifier_task_queue": relay_queue},
        check_roles=False,  # the relay answers reads only
    ) as roles:
        identity = roles.identities["verifier"]
        key = KeyPair.load(roles.public_key.with_suffix(".key"))
        relay = _Relay(mode, SourceRegistry(sources, observer=identity), identity, key, gate)
        client = await connect(identity=identity, address=temporal_dev)
        async with Worker(client, task_queue=relay_queue, activities=[relay.verify]):
            yield roles


async def _through_relay(
    temporal_dev: str, tmp_path: Path, db: Path, mode: str, batch: str, expect: int, **act: Any
) -> tuple[landed.Receipt, str]:
    async with _relayed(temporal_dev, tmp_path, db, mode) as roles:
        receipt = await roles.client.run(
            rows_task(f"relayed-{mode}", db, expect=expect, batch=batch, **act)
        )
    read_back = _read_back(receipt)
    return receipt, str((read_back[0].landed or {}).get("observation")) if read_back else ""


def _settle_inputs(seen: list[SettleInput]) -> Interceptor:
    """Keeps in ``seen`` what each replayed run hands to its settle step (the receipt it
    graded)."""

    def hook(
        input: StartLocalActivityInput,
        start: Callable[[StartLocalActivityInput], ActivityHandle[Any]],
    ) -> ActivityHandle[Any]:
        if input.activity == SETTLE_ACTIVITY:
            seen.append(input.args[0])
        return start(input)

    return _on_local_activity(hook)


def _graded_again_later(history: WorkflowHistory, later: timedelta) -> WorkflowHistory:
    """``history`` cut at the workflow task that graded and settled the task, with that task
    timed out and started again ``later``: what Temporal records when a runner stalls (a long
    pause, an overloaded machine) after the settle step wrote the ledger but before the task
    completed."""
    data = json.loads(history.to_json())
    events = data["events"]
    marker = max(i for i, e in enumerate(events) if e["eventType"] == "EVENT_TYPE_MARKER_RECORDED")
    started = max(
        i
        for i, e in enumerate(events[:marker])
        if e["eventType"] == "EVENT_TYPE_WORKFLOW_TASK_STARTED"
    )
    kept = events[: started + 1]
    started_id = kept[-1]["eventId"]
    scheduled_id = kept[-1]["workflowTaskStartedEventAttributes"]["scheduledEventId"]
    (scheduled,) = (e for e in kept if e["eventId"] == scheduled_id)
    began = datetime.fromisoformat(kept[-1]["eventTime"].replace("Z", "+00:00"))

    def stamp(at: datetime) -> str:
        return at.strftime("%Y-%m-%dT%H:%M:%S.%fZ")

    base = int(started_id)
    # Temporal hands a timed-out task to the worker's normal queue, not its sticky one.
    sticky = scheduled["workflowTaskScheduledEventAttributes"]["taskQueue"]
    queue = {"name": sticky.get("normalName") or sticky["name"], "kind": "TASK_QUEUE_KIND_NORMAL"}
    timed_out = stamp(began + timedelta(seconds=10))
    assert scheduled["eventType"] == "EVENT_TYPE_WORKFLOW_TASK_SCHEDULED"
    kept += [
        {
            "eventId": str(base + 1),
            "eventTime": timed_out,
            "eventType": "EVENT_TYPE_WORKFLOW_TASK_TIMED_OUT",
            "workflowTaskTimedOutEventAttributes": {
                "scheduledEventId": scheduled_id,
                "startedEventId": started_id,
                "timeoutType": "TIMEOUT_TYPE_START_TO_CLOSE",
            },
        },
        {
            "eventId": str(base + 2),
            "eventTime": timed_out,
            "eventType": "EVENT_TYPE_WORKFLOW_TASK_SCHEDULED",
            "workflowTaskScheduledEventAttributes": {
                "taskQueue": queue,
                "startToCloseTimeout": "10s",
                "attempt": 2,
            },
        },
        {
            "eventId": str(base + 3),
            "eventTime": stamp(began + later),
            "eventType": "EVENT_TYPE_WORKFLOW_TASK_STARTED",
            "workflowTaskStartedEventAttributes": {
                "scheduledEventId": str(base + 2),
                "identity": "runner-after-a-stall",
                "requestId": str(uuid.uuid4()),
            },
        },
    ]
    data["events"] = kept
    return WorkflowHistory.from_json(history.workflow_id, data)


async def test_a_task_graded_again_after_a_stalled_runner_settles_the_same_receipt(
    temporal_dev: str, tmp_path: Path, db: Path
) -> None:
    """The runner marks a relayed reading not observed while it grades. If that workflow task
    runs again later (the runner stalled after the ledger append), the receipt it grades must
    be the one already stored, bar its settle time: otherwise the ledger refuses it as a
    conflict and the settled task fails."""
    make_rows_db(db, preexisting=45, batch="pre")
    async with _relayed(temporal_dev, tmp_path, db, "no-before") as roles:
        receipt = await roles.client.run(rows_task("stall-1", db, expect=45, batch="pre"))
        history = await roles.temporal.get_workflow_handle("stall-1").fetch_history()
    (proof,) = _read_back(receipt)
    assert proof.result == "probe-error" and proof.checked_by == receipt.verdict_by
    seen: list[SettleInput] = []
    replayer = Replayer(
        workflows=[AgentTask], plugins=[landed_plugin()], interceptors=[_settle_inputs(seen)]
    )
    await replayer.replay_workflow(history)
    await replayer.replay_workflow(_graded_again_later(history, timedelta(minutes=3)))
    first, again = (inp.receipt for inp in seen)
    assert again.settled_at is not None and first.settled_at is not None
    assert again.settled_at - first.settled_at > timedelta(minutes=3) - timedelta(seconds=1)
    assert canonical_json(again.model_copy(update={"settled_at": None})) == canonical_json(
        first.model_copy(update={"settled_at": None})
    )
    assert canonical_json(first) == canonical_json(receipt)


@pytest.mark.parametrize("mode", ["no-before", "other-before", "easier-expect"])
async def test_a_relayed_reading_of_something_else_is_not_a_read_back(
    temporal_dev: str, tmp_path: Path, db: Path, mode: str
) -> None:
    """45 rows were there before; the act writes none. A worker on the queue the runner reads
    from relays each read to the real verifier without the before-state, or under an easier
    expectation: the readings come back signed with the trusted key, and still count for
    nothing, because each is held to its plan step and the task's pre-read."""
    make_rows_db(db, preexisting=45, batch="pre")
    receipt, observation = await _through_relay(temporal_dev, tmp_path, db, mode, "pre", 45)
    (proof,) = _read_back(receipt)
    assert proof.result == "probe-error", proof
    assert receipt.verdict != "verified"
    assert receipt.landed is not None and receipt.landed.proof_level != "P3"
    why = {
        "no-before": "before-state from the pre-read",
        "other-before": "another probe was run",
        "easier-expect": "expectation",
    }
    assert why[mode] in f"{proof} {observation}", (proof, observation)


@pytest.mark.parametrize(
    ("mode", "why"),
    [
        ("dressed-up", "differs from the observation the verifier signed"),
        ("probe-error-cover", "says nothing was observed, but its proof says pass"),
        ("swapped-before-outcome", "handed another before-state"),
        ("keyless-signature", None),
    ],
)
async def test_a_genuine_signature_under_a_dressed_up_reading_is_not_a_read_back(
    temporal_dev: str, tmp_path: Path, db: Path, mode: str, why: str | None
) -> None:
    """45 rows were there before; the act writes none. A worker on the queue the runner reads
    from gets a genuine signed reading of something weaker (an easier expectation, or the
    task's before value with its outcome swapped so the verifier sees a change) and shows the
    plan step beside it, or strips the signature's key id. None of them verifies, and the task
    still settles."""
    make_rows_db(db, preexisting=45, batch="pre")
    task = rows_task(f"dressed-{mode}", db, expect=45, batch="pre")
    # A state comparison, so a before reading that already passed makes the after one vacuous.
    task["proof_plan"][0]["expect"] = {"type": "equals", "value": 45}
    async with _relayed(temporal_dev, tmp_path, db, mode) as roles:
        receipt = await roles.client.run(task)
        async with await roles.ledger() as ledger:
            stored = await ledger.get(task["task_id"])
    (proof,) = _read_back(receipt)
    assert receipt.verdict != "verified", receipt
    assert receipt.landed is not None and receipt.landed.proof_level != "P3", receipt.landed
    assert [canonical_json(r) for r in stored] == [canonical_json(receipt)]
    assert act_runs(db, task["task_id"]) == [(1, task["task_id"])]
    if why is not None:
        assert proof.result == "probe-error", proof
        assert why in str((proof.landed or {}).get("observation")), proof.landed


async def test_the_task_cannot_switch_off_the_pre_read(
    temporal_dev: str, tmp_path: Path, db: Path, site: Site
) -> None:
    """pre_read is the runner operator's setting: a task's pre_read: false is ignored unless the
    runner allows tasks to skip it, so rows that were already there stay vacuous."""
    make_rows_db(db, preexisting=45, batch="pre")
    task = {**rows_task("no-pre", db, expect=45, batch="pre"), "pre_read": False}
    async with _roles(temporal_dev, tmp_path, db, site) as roles:
        receipt = await roles.client.run(task)
    assert _read_back(receipt)[0].result == "vacuous"
    assert receipt.verdict != "verified"
    assert receipt.landed is not None and receipt.landed.pre_read is True  # type: ignore[attr-defined]
    async with run_roles(
        temporal_dev,
        tmp_path,
        credentials={"rows-db": f"sqlite:///{db}"},
        sources={"rows-db": {"url": f"sqlite:///{db}"}},
        runner={"task_may_skip_pre_read": True},
    ) as allowed:
        skipped = await allowed.client.run({**task, "task_id": "no-pre-allowed"})
    assert skipped.landed is not None and skipped.landed.pre_read is False  # type: ignore[attr-defined]


async def test_task_probes_the_verifier_config_does_not_allow_are_refused_once(
    temporal_dev: str, tmp_path: Path, db: Path, site: Site
) -> None:
    """C1: a task's command probe reading the verifier's key or its parent's environment, and an
    absolute URL with no source, never run in the verifier; a refusal is not re-read."""
    ran = tmp_path / "ran"
    async with _roles(temporal_dev, tmp_path, db, site) as roles:
        private = roles.public_key.with_suffix(".key")
        task = rows_task("refused", db, expect=2, batch="rf", write=2)
        task["retry"] = {"verify_backoff": 2.0, "verify_attempts": 3}
        task["proof_plan"] = [
            {
                "action": "read the key",
                "probe": {"kind": "command", "argv": ["sh", "-c", f"touch {ran}; cat {private}"]},
                "expect": {"type": "non_empty"},
            },
            {
                "action": "read the parent's environment",
                "probe": {
                    "kind": "command",
                    "argv": [f"touch {ran}; tr '\\0' '\\n' < /proc/$PPID/environ | rev"],
                    "shell": True,
                },
                "expect": {"type": "non_empty"},
            },
            {
                "action": "read a page the actor controls",
                "probe": {"kind": "http", "url": f"{site.url}/posts?slug=x"},
                "expect": {"type": "non_empty"},
            },
        ]
        # Asked before the start, the verifier refuses all three; nothing starts.
        with pytest.raises(landed.TaskRefused) as refused:
            await roles.client.start(task)
        unchecked = landed.Client(
            roles.temporal, task_queue=roles.queues["runner"], check_roles=False
        )
        receipt = await unchecked.run(task)
        history = await roles.temporal.get_workflow_handle("refused").fetch_history()
    assert not ran.exists(), "the verifier ran a command the task supplied"
    assert str(refused.value).count(": refused: ") == 3, refused.value
    # Started anyway: the pre-read is refused, so the task settles blocked and never acts.
    assert receipt.verdict == "blocked" and act_runs(db, "refused") == []
    first = receipt.landed.findings[0] if receipt.landed else ""
    for step in (1, 2, 3):
        assert f"plan step {step}: refused: " in first, first
    pem = "".join(line for line in private.read_text().splitlines() if "-----" not in line)
    assert pem not in receipt.model_dump_json() and pem not in str(refused.value)
    verify_calls = [
        e
        for e in history.events
        if e.HasField("activity_task_scheduled_event_attributes")
        and e.activity_task_scheduled_event_attributes.activity_type.name == VERIFY_ACTIVITY
    ]
    assert len(verify_calls) == 1  # the pre-read, never re-read, and no read-back after it


async def test_a_malformed_report_after_the_write_is_an_unknown_write(
    temporal_dev: str, tmp_path: Path, db: Path, site: Site
) -> None:
    """The act writes its 3 rows, then returns a dict where an ActReport belongs. That refusal
    comes after the act ran, so it is an unknown write (DOD-10): read back first, and the rows
    that landed settle it, with the act run once, never a "failed" that invites a resubmit."""
    make_rows_db(db)
    task = rows_task("bad-report", db, expect=3, batch="br")
    task["act"] = {"name": "test.rows_bad_report", "input": {"batch": "br"}}
    async with _roles(temporal_dev, tmp_path, db, site) as roles:
        receipt = await roles.client.run(task)
    assert row_count(db, "br") == 3
    assert act_runs(db, "bad-report") == [(1, "bad-report")]
    (proof,) = _read_back(receipt)
    assert proof.result == "pass", proof
    assert receipt.verdict == "verified", receipt
    assert receipt.landed is not None
    assert "BadActReport" in (receipt.landed.model_dump().get("act_error") or ""), receipt.landed


async def test_an_attempt_the_time_cap_stops_is_not_counted(
    temporal_dev: str, tmp_path: Path, db: Path, site: Site
) -> None:
    """The first attempt fails before writing and uses up the time cap: no second attempt
    starts, so the receipt (and the ledger) name attempt 1, the one its readings were signed
    for."""
    make_rows_db(db)
    task = rows_task(
        "cap-attempt",
        db,
        expect=3,
        batch="ca",
        write=3,
        fail="before",
        fail_attempts=1,
        sleep_before_s=2.6,
    )
    task["time_cap"] = 3
    async with _roles(temporal_dev, tmp_path, db, site) as roles:
        receipt = await roles.client.run(task)
        async with await roles.ledger() as ledger:
            stored = await ledger.get("cap-attempt")
    assert act_runs(db, "cap-attempt") == [(1, "cap-attempt")]
    assert receipt.landed is not None and receipt.landed.attempt == 1, receipt.landed
    assert [r.landed.attempt for r in stored if r.landed] == [1]
    assert receipt.verdict != "verified"


async def test_a_task_the_cap_stops_before_its_act_keeps_signatures_that_verify(
    temporal_dev: str, tmp_path: Path, db: Path, site: Site
) -> None:
    """A slow system of record: the pre-read uses up the time cap, so no act attempt starts.
    The read-back is still signed for the attempt the receipt names, so the receipt checks out
    offline instead of looking changed after signing."""
    site.count_delay_s = 2.5
    task = publish_task("cap-before-act", "cba")
    task["time_cap"] = 3
    async with _roles(temporal_dev, tmp_path, db, site) as roles:
        receipt = await roles.client.run(task)
        trust = TrustStore.load([roles.public_key])
    assert site.count("cba") == 0  # the act never ran
    assert receipt.landed is not None and receipt.landed.attempt == 1, receipt.landed
    signed = [p for p in _read_back(receipt) if p.landed and "signature" in p.landed]
    assert signed, receipt.proof
    assert all(trust.signature_ok(receipt, p) for p in signed), signed
    assert receipt.verdict != "verified"


def _refuse_claims(ledger_url: str) -> None:
    """The ledger file starts refusing every new claim with an error (what a full disk or a
    broken ledger answers), through a trigger of its own; receipts are still taken."""
    path = ledger_url.removeprefix("sqlite:///")
    with sqlite3.connect(path) as conn:
        conn.execute(
            "CREATE TRIGGER refuse_claims BEFORE INSERT ON landed_claims "
            "BEGIN SELECT RAISE(ABORT, 'the ledger refuses claims'); END"
        )


async def _unsettled_by_a_5s_cap(roles: Roles, db: Path, task_id: str, batch: str) -> float:
    """Run a one-row task without a pre-read and a 5 s cap that must end unsettled; the
    seconds it took."""
    task = rows_task(task_id, db, expect=1, batch=batch, write=1)
    task["pre_read"] = False
    task["time_cap"] = 5
    started = time.monotonic()
    # Since the fleet gate (GOV-4) runs between the plan and the first act, the plan claims
    # nothing and the claim step after the gate is the one the ledger refuses: the attempts end
    # there and the task settles not done (nothing acted), by its cap as before.
    receipt = await asyncio.wait_for(roles.client.run(task), 60)
    assert receipt.verdict != "verified", receipt.landed
    return time.monotonic() - started


async def test_a_ledger_that_keeps_refusing_the_plan_fails_the_task_by_its_time_cap(
    temporal_dev: str, tmp_path: Path, db: Path, site: Site
) -> None:
    """No act starts unclaimed, and a ledger answering with errors does not hold the task at
    its plan for good: by its time cap the task closes unsettled, with nothing acted."""
    async with _roles(temporal_dev, tmp_path, db, site, task_may_skip_pre_read=True) as roles:
        _refuse_claims(roles.ledger_url)
        took = await _unsettled_by_a_5s_cap(roles, db, "plan-refused", "pr")
        async with await roles.ledger() as ledger:
            stored = await ledger.get("plan-refused")
    assert act_runs(db, "plan-refused") == []
    assert row_count(db, "pr") == 0
    assert [r.verdict for r in stored] in ([], ["failed"]), stored
    # The waits get half the 5 s cap (one wait of 1 s; a second of 2 s would not fit): two
    # tries, each cut at 1.25 s.
    assert took < 20, took


async def test_a_ledger_that_hangs_fails_the_task_by_its_time_cap_not_after_it(
    temporal_dev: str, tmp_path: Path, db: Path, site: Site
) -> None:
    """Another process holds the ledger's write lock, so each claim waits out SQLite's busy
    timeout (10 s): the plan's tries are cut so that all of them end within the 5 s cap."""
    async with _roles(temporal_dev, tmp_path, db, site, task_may_skip_pre_read=True) as roles:
        holder = sqlite3.connect(roles.ledger_url.removeprefix("sqlite:///"), isolation_level=None)
        holder.execute("BEGIN IMMEDIATE")
        task = rows_task("plan-hangs", db, expect=1, batch="ph", write=1)
        task["pre_read"] = False
        task["time_cap"] = 5
        try:
            handle = await roles.client.start(task)
            # Past the 5 s cap, with the ledger still locked: the claim's tries ended, no act.
            await asyncio.sleep(9)
            assert act_runs(db, "plan-hangs") == []
        finally:
            holder.execute("ROLLBACK")
            holder.close()
        # Since the fleet gate (GOV-4), the claim step (not the plan) is the one that hangs;
        # the settle waits for the ledger (nothing settled is lost) and the task is not done.
        receipt = await asyncio.wait_for(handle.result(), 60)
    assert act_runs(db, "plan-hangs") == []
    assert receipt.verdict != "verified", receipt.landed


async def test_a_claim_the_ledger_keeps_refusing_ends_the_attempts_and_settles_not_done(
    temporal_dev: str, tmp_path: Path, db: Path, site: Site
) -> None:
    """The claim step before the act (after a pre-read) cannot be recorded: no act runs, the
    attempts end by the time cap, and the task is read back and settled as not done, saying
    why."""
    async with _roles(temporal_dev, tmp_path, db, site) as roles:
        _refuse_claims(roles.ledger_url)
        task = rows_task("claim-refused", db, expect=1, batch="cr", write=1)
        task["time_cap"] = 5
        receipt = await asyncio.wait_for(roles.client.run(task), 60)
        async with await roles.ledger() as ledger:
            stored = await ledger.get("claim-refused")
    assert act_runs(db, "claim-refused") == []
    assert receipt.verdict != "verified"
    assert receipt.landed is not None
    assert "claim could not be recorded" in (receipt.landed.act_error or ""), receipt.landed
    assert [r.verdict for r in stored] == [receipt.verdict]


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
    async with _relayed(temporal_dev, tmp_path, db, "held-after", gate) as roles:
        async with await open_ledger(roles.ledger_url) as ledger:
            await ledger.claim("late-lost", "lost-run", 1, digest)
        handle = await roles.client.start(task)
        await _at_step(handle, "verify")
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


class _PlanReportedLate(Interceptor):
    """The runner reports its plan 20 s after the plan's ledger transaction committed."""

    def __init__(self) -> None:
        self.committed = asyncio.Event()

    def intercept_activity(self, next: ActivityInboundInterceptor) -> ActivityInboundInterceptor:
        outer = self

        class _Late(ActivityInboundInterceptor):
            async def execute_activity(self, input: ExecuteActivityInput) -> Any:
                result = await super().execute_activity(input)
                if activity.info().activity_type == PLAN_ACTIVITY and not outer.committed.is_set():
                    outer.committed.set()
                    await asyncio.sleep(20)
                return result

        return _Late(next)


async def test_a_run_cancelled_while_its_plan_claims_does_not_take_its_claim_for_anothers(
    temporal_dev: str, tmp_path: Path, db: Path, site: Site
) -> None:
    """The plan recorded this run's claim; the cancel arrives while the plan is still in
    flight. The cancel's read-only plan must not report this run's own claim as a lost run's."""
    make_rows_db(db)
    late = _PlanReportedLate()
    task = rows_task("cancel-plan", db, expect=1, batch="cp", write=1)
    task["pre_read"] = False
    async with _roles(
        temporal_dev, tmp_path, db, site, interceptors=(late,), task_may_skip_pre_read=True
    ) as roles:
        handle = await roles.client.start(task)
        await asyncio.wait_for(late.committed.wait(), 20)
        await asyncio.sleep(9)  # past the workflow task's heartbeat: the plan is still in flight
        await roles.temporal.get_workflow_handle("cancel-plan").cancel()
        receipt = await asyncio.wait_for(handle.result(), 60)
    assert act_runs(db, "cancel-plan") == []
    assert receipt.landed is not None
    assert not any("closed without settling" in f for f in receipt.landed.findings), receipt.landed


async def test_a_reset_to_before_a_failed_attempt_does_not_settle_the_task_twice(
    temporal_dev: str, tmp_path: Path, db: Path, site: Site
) -> None:
    """Attempt 1 failed before writing, attempt 2 wrote and settled. An operator resets to the
    workflow task that saw attempt 1 fail: the new run's read-back finds the row attempt 2
    wrote, and ends with attempt 2's receipt instead of settling attempt 1 beside it."""
    make_rows_db(db)
    async with _roles(temporal_dev, tmp_path, db, site) as roles:
        task = rows_task("reset-rec", db, expect=1, batch="rr2", write=1)
        task["act"]["input"].update({"fail_attempts": 1, "fail": "before"})
        task["retry"] = {"act_attempts": 2, "verify_backoff": 0.2}
        first = await roles.client.run(task)
        handle = roles.temporal.get_workflow_handle("reset-rec")
        events = (await handle.fetch_history()).events
        failed = next(
            i
            for i, e in enumerate(events)
            if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_FAILED
        )
        after_failure = next(
            e.event_id
            for e in events[failed:]
            if e.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED
        )
        desc = await handle.describe()
        reset = await roles.temporal.workflow_service.reset_workflow_execution(
            ResetWorkflowExecutionRequest(
                namespace=roles.temporal.namespace,
                workflow_execution=WorkflowExecution(workflow_id="reset-rec", run_id=desc.run_id),
                reason="an operator reset to the task that saw attempt 1 fail",
                workflow_task_finish_event_id=after_failure,
                request_id=str(uuid.uuid4()),
            )
        )
        again = await _result_of_run(roles, "reset-rec", reset.run_id)
        async with await roles.ledger() as ledger:
            stored = await ledger.get("reset-rec")
    assert first.verdict == "verified" and first.landed is not None and first.landed.attempt == 2
    assert [canonical_json(r) for r in stored] == [canonical_json(first)]
    assert canonical_json(again) == canonical_json(first)
    assert act_runs(db, "reset-rec") == [(1, "reset-rec"), (2, "reset-rec")]
