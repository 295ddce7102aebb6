"""A pydantic-ai agent adds orders through landed and reports landed's verdict. With
examples/first_task's ./dev.sh running and a model's key set (OPENAI_API_KEY, or another
provider's model in LANDED_EXAMPLE_MODEL): python pydantic_ai_agent.py"""

import os

from pydantic_ai import Agent

import landed
from landed.agents.pydantic_ai import landed_tool

INSTRUCTIONS = (
    "You run the shop. The act shop.add_orders takes {batch, count} and writes the orders. "
    "Read them back from the source shop-db with the query "
    "'select count(*) from orders where batch = ?' and expect the count. "
    "Report the tool's first line as it is: it is the verdict."
)


async def main() -> None:
    client = await landed.Client.connect()
    agent = Agent(
        os.environ.get("LANDED_EXAMPLE_MODEL", "openai:gpt-4o-mini"),
        instructions=INSTRUCTIONS,
        tools=[landed_tool(client, owner="shop-agent")],
    )
    result = await agent.run("Add 3 orders of batch 11.")
    print(result.output)


landed.run_main(main())
