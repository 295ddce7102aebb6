"""An agent that runs on Temporal itself starts landed's task as a child workflow, against a
real landed stack (a Temporal dev server and the three roles): the child acts, is read back and
settles; the parent gets the receipt, DONE for a full write and NOT DONE for a short one; the
child is started as ``landed.Client`` starts a task; and the parent's history replays. Both as
a workflow of one's own (``run_task_as_child``) and as a pydantic-ai agent on Temporal whose
model calls landed's in-workflow tool."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
from helpers.agent_workflows import SHOP_AGENT, ShopAgent, ShopOrder
from helpers.roles import Roles, rows_roles
from helpers.sor import make_rows_db, row_count, rows_task
from temporalio.client import WorkflowFailureError
from temporalio.common import SearchAttributeKey
from temporalio.exceptions import ApplicationError
from temporalio.worker import Replayer, Worker

from landed.agents.temporal import TASK_ID_TAKEN, TASK_REFUSED
from landed.receipts.model import Receipt
from landed.task.spec import TaskSpec
from landed.temporal.plugin import connect, landed_plugin, strict_workflow_runner

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

_OWNER = SearchAttributeKey.for_keyword("LandedOwner")
_RUNG = SearchAttributeKey.for_keyword("LandedRung")


async def _run_agent(roles: Roles, queue: str, agent_id: str, task: TaskSpec) -> Receipt:
    order = ShopOrder(task=task, runner_task_queue=roles.queues["runner"])
    receipt: Receipt = await roles.temporal.execute_workflow(
        SHOP_AGENT, order, id=agent_id, task_queue=queue, result_type=Receipt
    )
    return receipt


async def test_a_workflow_runs_the_task_as_its_child(temporal_dev: str, tmp_path: Path) -> None:
    db = make_rows_db(tmp_path / "rows.db")
    tag = uuid.uuid4().hex[:8]
    queue = f"shop-agent-{tag}"
    full = TaskSpec.model_validate(
        rows_task(f"child-full-{tag}", db, expect=3, batch=f"f{tag}", write=3)
    )
    short = TaskSpec.model_validate(
        rows_task(f"child-short-{tag}", db, expect=3, batch=f"s{tag}", write=2)
    )
    async with (
        rows_roles(temporal_dev, tmp_path, db) as roles,
        # The agent's own worker, on its own queue; the runner's worker runs the child.
        Worker(roles.temporal, task_queue=queue, workflows=[ShopAgent], max_cached_workflows=0),
    ):
        done = await _run_agent(roles, queue, f"agent-full-{tag}", full)
        not_done = await _run_agent(roles, queue, f"agent-short-{tag}", short)
        child = await roles.temporal.get_workflow_handle(full.task_id).describe()
        history = await roles.temporal.get_workflow_handle(f"agent-short-{tag}").fetch_history()
        with pytest.raises(WorkflowFailureError) as again:
            await _run_agent(roles, queue, f"agent-again-{tag}", full)
        # A spec check_spec refuses (an old meaning) fails the parent, naming the field.
        old = full.model_copy(update={"task_id": f"child-old-{tag}", "expect_meaning": 1})
        with pytest.raises(WorkflowFailureError) as refused:
            await _run_agent(roles, queue, f"agent-old-{tag}", old)
    assert done.done and done.verdict == "verified" and done.task_id == full.task_id, done.why
    assert not not_done.done and not_done.why == (
        "the read-back of 'insert 3 rows' found 2 where count(3) was expected (mismatch)."
    )
    assert row_count(db, f"f{tag}") == 3 and row_count(db, f"s{tag}") == 2
    # Started as landed.Client starts a task: its id is the task id, on the runner's queue, with
    # the task's owner searchable; the agent's run is its parent.
    assert child.parent_id == f"agent-full-{tag}" and child.task_queue == roles.queues["runner"]
    assert child.typed_search_attributes.get(_OWNER) == "agent-a"
    assert child.typed_search_attributes.get(_RUNG) is not None
    # One task id never acts twice: a second agent run with the same task is refused.
    cause = again.value.cause
    assert isinstance(cause, ApplicationError) and cause.type == TASK_ID_TAKEN, cause
    assert "give the new task its own task_id" in str(cause)
    assert row_count(db, f"f{tag}") == 3
    cause = refused.value.cause
    assert isinstance(cause, ApplicationError) and cause.type == TASK_REFUSED, cause
    assert "expect_meaning" in str(cause) and cause.non_retryable
    # The parent's history replays under the shared and the strict sandbox.
    for replayer in (
        Replayer(workflows=[ShopAgent], plugins=[landed_plugin()]),
        Replayer(
            workflows=[ShopAgent],
            plugins=[landed_plugin()],
            workflow_runner=strict_workflow_runner(),
        ),
    ):
        replayed = await replayer.replay_workflow(history, raise_on_replay_failure=False)
        assert replayed.replay_failure is None, replayed.replay_failure


async def test_a_pydantic_ai_agent_on_temporal_runs_its_action_as_a_child(
    temporal_dev: str, tmp_path: Path
) -> None:
    from helpers.pydantic_agent import (
        AGENT_RUNNER_QUEUE,
        PYDANTIC_SHOP_AGENT,
        RETURNS_APART,
        PydanticShopAgent,
        shop_agent,
    )
    from pydantic_ai.durable_exec.temporal import AgentPlugin, PydanticAIPlugin

    db = make_rows_db(tmp_path / "rows.db")
    tag = uuid.uuid4().hex[:8]
    queue, agent_id = f"pyd-agent-{tag}", f"pyd-agent-{tag}"
    plugins = [AgentPlugin(shop_agent)]
    async with rows_roles(temporal_dev, tmp_path, db, task_queue=AGENT_RUNNER_QUEUE) as roles:
        client = await connect(
            identity=f"pyd-agent@{tag}", address=temporal_dev, extra_plugins=[PydanticAIPlugin()]
        )
        worker = Worker(
            client,
            task_queue=queue,
            workflows=[PydanticShopAgent],
            plugins=plugins,
            max_cached_workflows=0,
        )
        async with worker:
            output: str = await client.execute_workflow(
                PYDANTIC_SHOP_AGENT, tag, id=agent_id, task_queue=queue, result_type=str
            )
        history = await client.get_workflow_handle(agent_id).fetch_history()
        answers = output.split(RETURNS_APART)
        tasks = [_task_of(answer) for answer in answers]
        parents = [
            (await roles.temporal.get_workflow_handle(t).describe()).parent_id for t in tasks
        ]
    assert len(answers) == 2, output
    assert answers[0].startswith("DONE: the read-back found what the plan expects"), answers[0]
    assert answers[1].splitlines()[0] == (
        "NOT DONE: the read-back of 'insert 3 rows' found 2 where count(3) was expected (mismatch)."
    ), answers[1]
    assert row_count(db, f"full-{tag}") == 3 and row_count(db, f"short-{tag}") == 2
    assert all(t.startswith("pyd-wf-agent-") for t in tasks) and parents == [agent_id] * 2
    replayer = Replayer(
        workflows=[PydanticShopAgent], plugins=[landed_plugin(), PydanticAIPlugin(), *plugins]
    )
    replayed = await replayer.replay_workflow(history, raise_on_replay_failure=False)
    assert replayed.replay_failure is None, replayed.replay_failure


def _task_of(answer: str) -> str:
    """The task id a tool's answer names (its ``task:`` line)."""
    lines = [line for line in answer.splitlines() if line.startswith("task: ")]
    assert len(lines) == 1, answer
    return lines[0].removeprefix("task: ")
