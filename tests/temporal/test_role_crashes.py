"""The three roles as real processes, and crashes that lose nothing: a role killed, stopped or
drained, or the dev server restarted on its file, while tasks act, read back and settle; each
task settles once, its act run once.

Each test starts Temporal's dev server (SQLite file, WAL) and `python -m landed worker ROLE`
three times, exactly as `landed dev` does.
"""

from __future__ import annotations

import asyncio
import signal
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from datetime import timedelta
from pathlib import Path

import pytest
from helpers.dev_stack import dev_stack
from helpers.sor import Site, act_runs, make_rows_db, publish_task, row_count, rows_task
from helpers.wait import until
from temporalio.api.enums.v1 import EventType

import landed
from landed.dev.stack import DevStack
from landed.ledger.factory import open_ledger
from landed.signing import TrustStore
from landed.task.names import AGENT_TASK_WORKFLOW
from landed.task.spec import TaskSpec
from landed.temporal.settings import DEFAULT_RUNNER_QUEUE

# Real processes on two shared cores: give each test room beyond the suite's default timeout.
pytestmark = pytest.mark.timeout(300)


@asynccontextmanager
async def _running(
    tmp_path: Path, site: Site, actor_env: dict[str, str] | None = None
) -> AsyncIterator[tuple[DevStack, Path, landed.Client, TrustStore]]:
    """A started stack over a fresh rows db, with its client and its verifier's trusted key;
    stopped after the block."""
    db = make_rows_db(tmp_path / "sor" / "rows.db")
    stack = dev_stack(tmp_path, db, site)
    stack.env["actor"].update(actor_env or {})  # type: ignore[attr-defined]
    await stack.start()
    try:
        _, public = stack.keys()
        yield stack, db, await stack.client(), TrustStore.load([public])
    finally:
        stack.stop()


async def _until(what: str, check: Callable[[], bool], timeout: float = 90.0) -> None:
    await until(what, check, timeout=timeout)


async def _settled_once(stack: DevStack, task_ids: list[str], trust: TrustStore) -> None:
    """Every task has exactly one receipt in the ledger, and none says done without a
    read-back that passed, was checked by the verifier and carries a valid signature."""
    ledger = await open_ledger(stack.ledger_url, create=False)
    try:
        for task_id in task_ids:
            stored = await ledger.get(task_id)
            assert len(stored) == 1, (task_id, stored)
            receipt = stored[0]
            if receipt.verdict in ("verified", "reconciled"):
                backs = [p for p in receipt.proof if p.kind in landed.READ_BACK_KINDS]
                assert backs and all(p.result == "pass" for p in backs)
                assert all(trust.signature_ok(receipt, p) for p in backs)
                assert all((p.checked_by or "").startswith("verifier@") for p in backs)
    finally:
        await ledger.close()


async def test_sigkill_actor_and_verifier_lose_nothing_duplicate_nothing(
    tmp_path: Path, site: Site
) -> None:
    async with _running(tmp_path, site) as (stack, db, client, trust):
        # Killed before its write: the read-back shows nothing landed, so the act runs again
        # (same idempotency key). Killed after its write: the read-back finds it, no re-run.
        before = await client.start(
            rows_task("kill-before", db, expect=3, batch="kb", write=3, sleep_before_s=15)
        )
        after = await client.start(
            rows_task("kill-after", db, expect=3, batch="ka", write=3, sleep_after_s=15)
        )
        await _until(
            "both acts in flight, one before and one after its write",
            lambda: bool(act_runs(db, "kill-before")) and row_count(db, "ka") == 3,
        )
        stack.roles["actor"].kill()
        stack.start_role("actor")
        await stack.roles["actor"].wait_ready()
        r_before, r_after = await before.result(), await after.result()
        assert r_before.verdict == "verified" and r_after.verdict == "verified"
        assert [a for a, _ in act_runs(db, "kill-before")] == [1, 2]
        assert {k for _, k in act_runs(db, "kill-before")} == {"kill-before"}
        assert [a for a, _ in act_runs(db, "kill-after")] == [1]
        assert row_count(db, "kb") == 3 and row_count(db, "ka") == 3

        # The verifier dies while the after-read is in flight; the read is retried on the
        # restarted verifier, and the publish still happened exactly once.
        site.count_delay_after_publish_s = 30.0  # the after-read hangs until the kill
        task = await client.start(publish_task("kill-verifier", "kv"))
        await _until(
            "the after-read in flight", lambda: site.publishes >= 1 and site.count_reads >= 2
        )
        stack.roles["verifier"].kill()
        site.count_delay_after_publish_s = 0.0
        stack.start_role("verifier")
        await stack.roles["verifier"].wait_ready()
        receipt = await task.result()
        assert receipt.verdict == "verified"
        assert site.count("kv") == 1 and site.publishes == 1
        await _settled_once(stack, ["kill-before", "kill-after", "kill-verifier"], trust)


@pytest.mark.parametrize("grace", ["30", "0.3"])
async def test_sigterm_drains_the_actor_and_an_act_in_flight_runs_once(
    tmp_path: Path, site: Site, grace: str
) -> None:
    """SIGTERM (a deploy) lets the act in flight finish within the actor's grace; past it the
    act is cancelled, but its thread still writes, and the attempt is reported only after
    that, so the read-back finds the rows and the act never runs twice. No actor is running
    afterwards: a second attempt would wait for one and the task would never settle."""
    actor_env = {"LANDED_ACTOR_GRACEFUL_SHUTDOWN_S": grace}
    async with _running(tmp_path, site, actor_env) as (stack, db, client, trust):
        task = await client.start(
            rows_task("drain", db, expect=3, batch="dr", write=3, sleep_before_s=2)
        )
        await _until("the act in flight", lambda: bool(act_runs(db, "drain")))
        actor = stack.roles["actor"]
        assert actor.proc is not None
        actor.proc.send_signal(signal.SIGTERM)
        code = await asyncio.to_thread(actor.proc.wait, 60)
        assert code == 0
        assert row_count(db, "dr") == 3  # written before the actor left
        receipt = await asyncio.wait_for(task.result(), 60)
        assert receipt.verdict == "verified"
        assert act_runs(db, "drain") == [(1, "drain")]
        await _settled_once(stack, ["drain"], trust)


async def test_a_runner_stalled_past_its_workflow_tasks_settles_each_task_once(
    tmp_path: Path, site: Site
) -> None:
    """The runner stops (SIGSTOP: a long pause, an overloaded machine) again and again for
    longer than a workflow task may take, while tasks act, read back and settle. Each stalled
    task runs again and grades again, sometimes after its receipt is already in the ledger:
    every task still settles exactly once, verified, with its act run once, and none fails."""
    async with _running(tmp_path, site) as (stack, db, client, trust):
        runner = stack.roles["runner"].proc
        assert runner is not None
        ids = [f"stall-{i}" for i in range(24)]
        handles = [
            await client.temporal.start_workflow(
                AGENT_TASK_WORKFLOW,
                TaskSpec.model_validate(rows_task(task_id, db, expect=1, batch=task_id, write=1)),
                id=task_id,
                task_queue=DEFAULT_RUNNER_QUEUE,
                result_type=landed.Receipt,
                # A short workflow task timeout, so each pause below outlasts the tasks the
                # runner had started.
                task_timeout=timedelta(seconds=1),
            )
            for task_id in ids
        ]
        try:
            for _ in range(8):
                runner.send_signal(signal.SIGSTOP)
                await asyncio.sleep(1.5)
                runner.send_signal(signal.SIGCONT)
                await asyncio.sleep(0.6)
        finally:
            runner.send_signal(signal.SIGCONT)  # never leave it stopped
        receipts = await asyncio.wait_for(asyncio.gather(*(h.result() for h in handles)), 180)
        assert all(r.verdict == "verified" for r in receipts), [r.verdict for r in receipts]
        for task_id in ids:
            assert act_runs(db, task_id) == [(1, task_id)] and row_count(db, task_id) == 1
        await _settled_once(stack, ids, trust)
        timed_out = 0
        for h in handles:
            history = await h.fetch_history()
            timed_out += any(
                e.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_TIMED_OUT for e in history.events
            )
        assert timed_out, "no workflow task outlasted a pause: the stall was not exercised"


async def test_sigkill_runner_while_tasks_settle_loses_nothing_settles_once(
    tmp_path: Path, site: Site
) -> None:
    """The runner is killed while tasks are between act and settle, twice; a new runner picks
    their workflows up from history. No act runs again and every task settles once, verified."""
    async with _running(tmp_path, site) as (stack, db, client, trust):
        ids = [f"runner-kill-{i}" for i in range(20)]
        handles = [
            await client.start(rows_task(task_id, db, expect=1, batch=task_id, write=1))
            for task_id in ids
        ]
        for wave in (5, 12):
            await _until(
                f"{wave} acts done", lambda n=wave: sum(row_count(db, t) for t in ids) >= n
            )
            stack.roles["runner"].kill()
            stack.start_role("runner")
            await stack.roles["runner"].wait_ready()
        receipts = await asyncio.wait_for(asyncio.gather(*(h.result() for h in handles)), 180)
        assert all(r.verdict == "verified" for r in receipts), [r.verdict for r in receipts]
        for task_id in ids:
            assert act_runs(db, task_id) == [(1, task_id)] and row_count(db, task_id) == 1
        await _settled_once(stack, ids, trust)
        # The killed runners' work was taken over: tasks ran on more than one runner.
        runners = set()
        for task_id in ids:
            history = await client.temporal.get_workflow_handle(task_id).fetch_history()
            runners |= {
                e.workflow_task_started_event_attributes.identity
                for e in history.events
                if e.HasField("workflow_task_started_event_attributes")
            }
        assert len(runners) >= 2, runners


async def test_dev_server_restart_with_file_db_loses_no_task(tmp_path: Path, site: Site) -> None:
    async with _running(tmp_path, site) as (stack, db, client, trust):
        assert stack.server is not None and stack.server.db_file is not None
        ids = [f"restart-{i}" for i in range(6)]
        tasks = {
            task_id: rows_task(task_id, db, expect=2, batch=f"rs{i}", write=2, sleep_before_s=1.5)
            for i, task_id in enumerate(ids)
        }
        for task in tasks.values():
            await client.start(task)
        await _until("three acts in flight", lambda: all(act_runs(db, t) for t in ids[:3]))
        # Kill the server while acts are in flight, then start it again on its file.
        stack.server.kill()
        await asyncio.sleep(1.0)
        # A task started while the server is down waits for it, as do the waiters: the same
        # client, no retry loop of the caller's own.
        ids.append("restart-late")
        tasks["restart-late"] = rows_task("restart-late", db, expect=2, batch="rs6", write=2)
        late = asyncio.create_task(client.run(tasks["restart-late"]))
        # Down past the SDK's own retries (about 10 s), as a server recovering from a full disk
        # answers "shard status unknown" for longer.
        await asyncio.sleep(12.0)
        assert not late.done(), late
        await asyncio.to_thread(stack.server.restart)
        receipts = [await client.run(tasks[task_id]) for task_id in ids[:-1]]
        receipts.append(await late)
        assert [r.task_id for r in receipts] == ids
        for i, receipt in enumerate(receipts):
            assert row_count(db, f"rs{i}") == 2, receipt.task_id  # never duplicated
            assert receipt.verdict == "verified", (receipt.task_id, receipt.landed)
        await _settled_once(stack, ids, trust)
