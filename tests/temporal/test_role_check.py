"""No act without a check that can run, on a real dev server with the three roles: a task whose
probe names a source the verifier lacks, or whose act the actor does not know, is refused
before it starts (with the fix); started anyway, it settles blocked before any act, the real
database unchanged; a healthy task passes the check and verifies."""

from __future__ import annotations

import asyncio
import json
import sys
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from helpers.roles import Roles, rows_roles
from helpers.sor import act_runs, make_rows_db, row_count, rows_task
from helpers.wait import until
from temporalio.service import RPCError, RPCStatusCode
from temporalio.worker import Replayer

import landed
from landed.receipts.model import Receipt
from landed.task.checkable import check_queue
from landed.task.names import ACT_ACTIVITY, VERIFY_ACTIVITY
from landed.temporal.plugin import landed_plugin
from landed.temporal.role_check import RoleCheck

pytestmark = [pytest.mark.asyncio(loop_scope="module"), pytest.mark.timeout(120)]

_SOURCE_FIX = "LANDED_SOURCES__ORDERS_DB__URL"
_ACT_FIX = "LANDED_ACTOR_ACTS"


class Stack:
    def __init__(self, roles: Roles, db: Path, address: str) -> None:
        self.roles, self.db, self.address = roles, db, address
        # The caller who knows better: starts tasks without asking the roles first.
        self.unchecked = landed.Client(
            roles.temporal, task_queue=roles.queues["runner"], check_roles=False
        )


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def stack(
    temporal_dev: str, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[Stack]:
    tmp = tmp_path_factory.mktemp("role-check")
    db = make_rows_db(tmp / "rows.db")
    async with rows_roles(temporal_dev, tmp, db) as roles:
        yield Stack(roles, db, temporal_dev)


def _unsourced(task_id: str, db: Path) -> dict[str, Any]:
    task = rows_task(task_id, db, expect=1, batch=task_id, write=1)
    task["proof_plan"][0]["probe"]["source"] = "orders-db"
    return task


def _unknown_act(task_id: str, db: Path) -> dict[str, Any]:
    task = rows_task(task_id, db, expect=1, batch=task_id, write=1)
    task["act"] = {"name": "test.not_registered", "input": {"batch": task_id, "write": 1}}
    return task


async def _not_started(stack: Stack, task_id: str) -> None:
    with pytest.raises(RPCError) as missing:
        await stack.roles.temporal.get_workflow_handle(task_id).describe()
    assert missing.value.status == RPCStatusCode.NOT_FOUND


async def _scheduled(stack: Stack, receipt: Receipt) -> list[str]:
    """The activities the task's workflow scheduled; its history replays as recorded."""
    history = await stack.roles.temporal.get_workflow_handle(receipt.task_id).fetch_history()
    from landed.workflows.agent_task import AgentTask

    await Replayer(workflows=[AgentTask], plugins=[landed_plugin()]).replay_workflow(history)
    return [
        e.activity_task_scheduled_event_attributes.activity_type.name
        for e in history.events
        if e.HasField("activity_task_scheduled_event_attributes")
    ]


def _blocked_with_fix(receipt: Receipt, fix: str) -> None:
    assert receipt.verdict == "blocked", receipt
    assert receipt.landed is not None
    first = receipt.landed.findings[0]
    assert first.startswith("DOD-9: blocked before any act"), receipt.landed.findings
    assert fix in first, first


async def test_a_source_the_verifier_lacks_is_refused_before_start(stack: Stack) -> None:
    with pytest.raises(landed.TaskRefused) as refused:
        await stack.roles.client.start(_unsourced("rc-src", stack.db))
    said = str(refused.value)
    assert "no source named 'orders-db'" in said and _SOURCE_FIX in said, said
    assert "--no-role-check" in said
    await _not_started(stack, "rc-src")
    assert act_runs(stack.db, "rc-src") == [] and row_count(stack.db, "rc-src") == 0


async def test_unchecked_a_missing_source_settles_blocked_before_any_act(stack: Stack) -> None:
    receipt = await stack.unchecked.run(_unsourced("rc-src-off", stack.db))
    _blocked_with_fix(receipt, _SOURCE_FIX)
    assert act_runs(stack.db, "rc-src-off") == [] and row_count(stack.db, "rc-src-off") == 0
    assert await _scheduled(stack, receipt) == [VERIFY_ACTIVITY]  # the pre-read only


async def test_an_unregistered_act_is_refused_and_unchecked_settles_blocked(stack: Stack) -> None:
    with pytest.raises(landed.TaskRefused) as refused:
        await stack.roles.client.start(_unknown_act("rc-act", stack.db))
    said = str(refused.value)
    assert "no act named 'test.not_registered'" in said and _ACT_FIX in said, said
    await _not_started(stack, "rc-act")
    receipt = await stack.unchecked.run(_unknown_act("rc-act-off", stack.db))
    _blocked_with_fix(receipt, _ACT_FIX)
    assert receipt.landed is not None and receipt.landed.attempt == 1
    assert row_count(stack.db, "rc-act-off") == 0
    # The actor refused the act unrun; nothing was read back after it.
    scheduled = await _scheduled(stack, receipt)
    assert (scheduled.count(VERIFY_ACTIVITY), scheduled.count(ACT_ACTIVITY)) == (1, 1), scheduled


async def test_a_healthy_task_passes_the_check_and_verifies(stack: Stack) -> None:
    first = await stack.roles.client.run(
        rows_task("rc-ok", stack.db, expect=2, batch="ok", write=2)
    )
    again = await stack.roles.client.run(
        rows_task("rc-ok2", stack.db, expect=1, batch="o2", write=1)
    )
    assert (first.verdict, again.verdict) == ("verified", "verified")
    assert act_runs(stack.db, "rc-ok") == [(1, "rc-ok")]


async def test_like_tasks_started_together_ask_the_roles_once(stack: Stack) -> None:
    """The check costs one workflow per act and probe shape while its answer is kept, not one
    per task: three like tasks started at once share one ask."""
    queue = stack.roles.queues["runner"]
    # The preflight runs on the runner's role check queue, apart from its tasks.
    query = f'WorkflowType = "LandedPreflight" AND TaskQueue = "{check_queue(queue)}"'

    async def asked() -> int:
        return (await stack.roles.temporal.count_workflows(query)).count

    async def settled() -> tuple[int] | None:
        # The count once visibility has caught up with earlier checks (none, when this test is
        # the first on its stack: under xdist the tests before it may run on another worker).
        first = await asked()
        await asyncio.sleep(1.0)
        return (first,) if await asked() == first else None

    (before,) = await until("earlier checks visible", settled, timeout=60)
    client = landed.Client(stack.roles.temporal, task_queue=queue)
    tasks = [
        rows_task(f"rc-like-{i}", stack.db, expect=1, batch=f"l{i}", write=1) for i in range(3)
    ]
    handles = await asyncio.gather(*(client.start(t) for t in tasks))

    async def asked_since() -> int:
        return await asked() - before

    assert await until("the new check visible", asked_since) == 1
    receipts = await asyncio.gather(*(h.result() for h in handles))
    assert [r.verdict for r in receipts] == ["verified"] * 3
    assert await asked_since() == 1


async def test_a_runner_that_does_not_answer_is_named(stack: Stack) -> None:
    queue = f"nobody-{uuid.uuid4().hex[:8]}"
    check = RoleCheck(stack.roles.temporal, queue, wait_s=0.5)
    spec = landed.TaskSpec.model_validate(rows_task("rc-silent", stack.db, expect=1, batch="s"))
    with pytest.raises(landed.TaskRefused) as refused:
        await check.check(spec)
    said = str(refused.value)
    assert f"the runner on task queue {queue!r} gave no answer" in said, said
    assert "landed worker runner" in said


async def test_a_verifier_that_does_not_answer_is_named(temporal_dev: str, tmp_path: Path) -> None:
    """The runner answers, but no verifier polls its queue: refused, naming the verifier."""
    db = make_rows_db(tmp_path / "rows.db")
    async with rows_roles(temporal_dev, tmp_path, db, verifier=False) as roles:
        check = RoleCheck(roles.temporal, roles.queues["runner"], wait_s=1)
        spec = landed.TaskSpec.model_validate(rows_task("rc-noverifier", db, expect=1, batch="v"))
        with pytest.raises(landed.TaskRefused) as refused:
            await check.check(spec)
    said = str(refused.value)
    assert "the verifier on task queue 'nobody-" in said and "landed worker verifier" in said
    assert "the actor" not in said, said  # the actor answered: only the silent role is named


async def _submit(stack: Stack, task: dict[str, Any], *flags: str) -> tuple[int, str, str]:
    path = stack.db.parent / f"{task['task_id']}.json"
    path.write_text(json.dumps(task))
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "landed", "submit", str(path), *flags,
        "--address", stack.address, "--task-queue", stack.roles.queues["runner"],
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    out, err = await asyncio.wait_for(proc.communicate(), 90)
    assert proc.returncode is not None
    return proc.returncode, out.decode(), err.decode()


async def test_submit_exits_5_with_the_fix_and_wait_shows_it_first(stack: Stack) -> None:
    code, _out, err = await _submit(stack, _unsourced("rc-cli", stack.db), "--wait")
    assert code == 5, err
    assert _SOURCE_FIX in err and "nothing could check it" in err, err
    await _not_started(stack, "rc-cli")
    code, out, err = await _submit(
        stack, _unsourced("rc-cli-off", stack.db), "--wait", "--no-role-check"
    )
    assert code == 1, (out, err)
    lines = out.splitlines()
    assert lines[1].startswith("NOT DONE: not done (blocked): DOD-9: blocked before any act"), out
    assert lines[2].startswith("verdict blocked"), out
    assert lines[3].strip().startswith("DOD-9: blocked before any act") and _SOURCE_FIX in lines[3]
    assert act_runs(stack.db, "rc-cli-off") == []
