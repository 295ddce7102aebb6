"""landed as an OpenAI Agents SDK function tool: ``Agent(..., tools=[landed_function_tool(
client, owner=...)])``. The model calls it with the action it means to take; it gets back
landed's verdict."""

from __future__ import annotations

from agents import FunctionTool, function_tool

from landed.agents.action import DESCRIPTION, make_action
from landed.agents.service import DEFAULT_WAIT_S, LandedTools
from landed.task.claim_contracts import ClaimContracts
from landed.temporal.client import Client

__all__ = ["landed_function_tool"]


def landed_function_tool(
    client: Client,
    *,
    owner: str = "agent",
    contracts: ClaimContracts | None = None,
    own_plans: bool = True,
    timeout_s: float = DEFAULT_WAIT_S,
    name: str = "landed_act",
) -> FunctionTool:
    """A FunctionTool that runs the model's intended action as a landed task owned by
    ``owner`` and returns the verdict text (DONE / NOT DONE and why) to the model.

    The act's input and proof plan are free-form JSON objects, so the tool's schema is not
    strict (``strict_mode=False``). ``contracts`` and ``own_plans`` as in
    ``landed.agents.pydantic_ai.landed_tool``."""
    tools = LandedTools(client, owner=owner, contracts=contracts, own_plans=own_plans)
    return function_tool(
        make_action(tools, timeout_s),
        name_override=name,
        description_override=DESCRIPTION,
        strict_mode=False,
    )
