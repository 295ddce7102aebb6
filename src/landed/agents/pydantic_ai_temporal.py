"""landed as a tool of a pydantic-ai agent that runs on Temporal (pydantic-ai's durable
execution: ``TemporalAgent``, or an ``Agent`` with the ``TemporalDurability`` capability): the
model's intended action becomes landed's task, started as a child workflow of the agent's own
workflow, and the model reads back landed's verdict.

pydantic-ai runs a durable agent's tools as activities, and an activity cannot start a child
workflow: only workflow code can. So this tool carries pydantic-ai's per-tool metadata
``{"temporal": False}``, which runs it in the agent's workflow itself. Its body is workflow code:
it validates the action, starts the child (``landed.agents.temporal.run_task_as_child``) and
waits for its receipt; it does no I/O, and a new task's id comes from ``workflow.uuid4()``."""

from __future__ import annotations

from typing import Any

from pydantic_ai import Tool

from landed.agents.action import DESCRIPTION, action_over
from landed.agents.temporal import ChildActions
from landed.task.claim_contracts import ClaimContracts

__all__ = ["IN_WORKFLOW", "landed_child_tool"]

#: pydantic-ai's per-tool Temporal metadata that runs a tool in the workflow, not an activity.
IN_WORKFLOW: dict[str, Any] = {"temporal": False}


def landed_child_tool(
    *,
    runner_task_queue: str,
    owner: str = "agent",
    contracts: ClaimContracts | None = None,
    own_plans: bool = True,
    name: str = "landed_act",
) -> Tool[Any]:
    """A pydantic-ai Tool, for an agent that runs inside a Temporal workflow, that runs the
    model's intended action as a landed task owned by ``owner``: a child workflow on the
    runner's queue ``runner_task_queue``. The model gets the verdict text (DONE / NOT DONE and
    why). ``contracts`` and ``own_plans`` as in ``landed.agents.pydantic_ai.landed_tool``.

    Outside a workflow the tool cannot start a child: use ``landed_tool`` there."""
    actions = ChildActions(runner_task_queue, owner=owner, contracts=contracts, own_plans=own_plans)
    return Tool(action_over(actions.act), name=name, description=DESCRIPTION, metadata=IN_WORKFLOW)
