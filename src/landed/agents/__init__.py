"""landed for the agent frameworks people already use: an MCP server (``landed mcp``), a
pydantic-ai tool and an OpenAI Agents SDK tool, and for agents that run on Temporal themselves,
the task as a child workflow (``landed.agents.temporal``, with a pydantic-ai tool for its durable
agents). Each hands the agent's intended action to landed and gives the model back landed's
verdict (DONE / NOT DONE and why), never its own claim.

Nothing is imported here: each framework's module imports its framework, and only when used
(``pip install 'landed[agents]'``)."""
