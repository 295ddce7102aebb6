"""A pydantic-ai agent on Temporal (durable execution) whose scripted model calls landed's
in-workflow tool, for the child-workflow tests: ``PydanticShopAgent`` runs it. Workflow code,
in a module of its own so the workflow sandbox can import it again."""

from __future__ import annotations

from typing import Any

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from pydantic_ai import Agent
    from pydantic_ai.durable_exec.temporal import TemporalDurability
    from pydantic_ai.messages import (
        ModelMessage,
        ModelRequest,
        ModelResponse,
        TextPart,
        ToolCallPart,
        ToolReturnPart,
        UserPromptPart,
    )
    from pydantic_ai.models.function import AgentInfo, FunctionModel

    from landed.agents.pydantic_ai_temporal import landed_child_tool

__all__ = [
    "AGENT_RUNNER_QUEUE",
    "PYDANTIC_SHOP_AGENT",
    "RETURNS_APART",
    "PydanticShopAgent",
    "rows_call",
    "shop_agent",
]

#: The runner's queue the pydantic-ai agent's tool starts tasks on: an agent is declared once,
#: at import, so the test's runner polls this queue.
AGENT_RUNNER_QUEUE = "landed-runner-for-pydantic-agents"
PYDANTIC_SHOP_AGENT = "TestPydanticShopAgent"
#: What the scripted model answers last: every tool return, joined by this line.
RETURNS_APART = "\n=====\n"


def rows_call(batch: str, write: int) -> dict[str, Any]:
    """The tool's arguments as a model would send them: write ``write`` rows, expect 3."""
    return {
        "act": "test.rows",
        "input": {"batch": batch, "write": write},
        "outcome": f"3 rows of batch {batch} are in the rows table",
        "proof_plan": [
            {
                "action": "insert 3 rows",
                "probe": {
                    "kind": "record",
                    "source": "rows-db",
                    "query": "select count(*) from rows where batch = ?",
                    "params": [batch],
                },
                "expect": {"type": "count", "value": 3},
            }
        ],
    }


def _scripted(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """A model with no network: the prompt is a tag; it asks for a full write of batch
    full-TAG, then a short one of short-TAG, then answers with what each call returned."""
    requests = [m for m in messages if isinstance(m, ModelRequest)]
    tag = next(str(p.content) for p in requests[0].parts if isinstance(p, UserPromptPart))
    returned = [str(p.content) for m in requests for p in m.parts if isinstance(p, ToolReturnPart)]
    calls = [rows_call(f"full-{tag}", 3), rows_call(f"short-{tag}", 2)]
    if len(returned) < len(calls):
        tool = info.function_tools[0].name
        return ModelResponse(parts=[ToolCallPart(tool, calls[len(returned)])])
    return ModelResponse(parts=[TextPart(RETURNS_APART.join(returned))])


shop_agent: Agent[None, str] = Agent(
    FunctionModel(_scripted),
    name="landed_test_shop",
    tools=[landed_child_tool(runner_task_queue=AGENT_RUNNER_QUEUE, owner="pyd-wf-agent")],
    capabilities=[TemporalDurability()],
)


@workflow.defn(name=PYDANTIC_SHOP_AGENT)
class PydanticShopAgent:
    @workflow.run
    async def run(self, tag: str) -> str:
        result = await shop_agent.run(tag)
        return result.output
