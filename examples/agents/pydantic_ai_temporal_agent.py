"""A pydantic-ai agent on Temporal (durable execution) adds orders through landed: its tool
starts landed's task as a child of the agent's workflow, and the agent reports landed's verdict.
With examples/first_task's ./dev.sh running and a model's key set (OPENAI_API_KEY, or another
provider's model in LANDED_EXAMPLE_MODEL): python pydantic_ai_temporal_agent.py"""

import os
import uuid

from temporalio import workflow
from temporalio.worker import Worker

with workflow.unsafe.imports_passed_through():
    from pydantic_ai import Agent
    from pydantic_ai.durable_exec.temporal import AgentPlugin, PydanticAIPlugin, TemporalDurability

    import landed
    from landed.agents.pydantic_ai_temporal import landed_child_tool
    from landed.temporal.plugin import connect

INSTRUCTIONS = (
    "You run the shop. The act shop.add_orders takes {batch, count} and writes the orders. "
    "Read them back from the source shop-db with the query "
    "'select count(*) from orders where batch = ?' and expect the count. "
    "Report the tool's first line as it is: it is the verdict."
)
AGENT_QUEUE = "shop-pydantic-agent"
#: The runner's task queue; the agent is declared once, at import.
RUNNER_QUEUE = os.environ.get("LANDED_TASK_QUEUE", "landed-runner")

agent = Agent(
    os.environ.get("LANDED_EXAMPLE_MODEL", "openai:gpt-4o-mini"),
    name="shop",
    instructions=INSTRUCTIONS,
    tools=[landed_child_tool(runner_task_queue=RUNNER_QUEUE, owner="shop-agent")],
    # pydantic-ai's durable execution on Temporal (TemporalAgent(...) in older releases).
    capabilities=[TemporalDurability()],
)


@workflow.defn
class ShopAgent:
    @workflow.run
    async def run(self, prompt: str) -> str:
        return (await agent.run(prompt)).output


async def main() -> None:
    # landed's plugin (its data converter, for TaskSpec and Receipt), then pydantic-ai's.
    client = await connect(identity="shop-agent", extra_plugins=[PydanticAIPlugin()])
    async with Worker(
        client, task_queue=AGENT_QUEUE, workflows=[ShopAgent], plugins=[AgentPlugin(agent)]
    ):
        output = await client.execute_workflow(
            ShopAgent.run,
            "Add 3 orders of batch 15.",
            id=f"shop-pydantic-agent-{uuid.uuid4().hex[:8]}",
            task_queue=AGENT_QUEUE,
        )
    print(output)


if __name__ == "__main__":  # the workflow sandbox imports this module again: no run there
    landed.run_main(main())
