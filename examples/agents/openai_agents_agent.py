"""An OpenAI Agents SDK agent adds orders through landed and reports landed's verdict. With
examples/first_task's ./dev.sh running and OPENAI_API_KEY set: python openai_agents_agent.py"""

import os

from agents import Agent, Runner

import landed
from landed.agents.openai_agents import landed_function_tool

INSTRUCTIONS = (
    "You run the shop. The act shop.add_orders takes {batch, count} and writes the orders. "
    "Read them back from the source shop-db with the query "
    "'select count(*) from orders where batch = ?' and expect the count. "
    "Report the tool's first line as it is: it is the verdict."
)


async def main() -> None:
    client = await landed.Client.connect()
    agent = Agent(
        name="shop",
        instructions=INSTRUCTIONS,
        model=os.environ.get("LANDED_EXAMPLE_MODEL", "gpt-4o-mini"),
        tools=[landed_function_tool(client, owner="shop-agent")],
    )
    result = await Runner.run(agent, "Add 3 orders of batch 12.")
    print(result.final_output)


landed.run_main(main())
