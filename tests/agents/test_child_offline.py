"""landed's in-workflow tool for pydantic-ai agents on Temporal, without a server: it carries
the metadata that runs it in the workflow, offers the model the client tool's parameters, and
outside a workflow it starts nothing and says which tool to use instead."""

from __future__ import annotations

import pytest

import landed
from landed.agents.action import action_over
from landed.agents.pydantic_ai import landed_tool
from landed.agents.pydantic_ai_temporal import landed_child_tool
from landed.agents.temporal import ChildActions

PLAN = [
    {
        "action": "add 3 orders",
        "probe": {"kind": "record", "source": "shop-db", "query": "select count(*) from o"},
        "expect": {"type": "count", "value": 3},
    }
]


def test_the_tool_runs_in_the_workflow_with_the_client_tools_parameters() -> None:
    child = landed_child_tool(runner_task_queue="landed-runner", owner="shop-agent")
    client = landed.Client(object(), check_roles=False)  # type: ignore[arg-type]
    plain = landed_tool(client, owner="shop-agent")
    assert child.tool_def.metadata == {"temporal": False}
    assert plain.tool_def.metadata != {"temporal": False}
    assert child.name == plain.name == "landed_act"
    assert child.tool_def.parameters_json_schema == plain.tool_def.parameters_json_schema
    assert child.tool_def.description == plain.tool_def.description


async def test_outside_a_workflow_it_starts_nothing_and_names_the_client_tool() -> None:
    act = action_over(ChildActions("landed-runner", owner="shop-agent").act)
    said = await act(act="shop.add_orders", input={}, outcome="3 orders", proof_plan=PLAN)
    assert said.startswith("NOT DONE: this tool starts landed's task as a child workflow"), said
    assert "landed_tool(client)" in said


@pytest.mark.parametrize("queue", ["", "  "])
def test_the_runners_queue_must_be_named(queue: str) -> None:
    with pytest.raises(ValueError, match="name the runner's task queue"):
        landed_child_tool(runner_task_queue=queue)
