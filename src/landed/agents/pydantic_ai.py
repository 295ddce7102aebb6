"""landed as a pydantic-ai tool: ``Agent(model, tools=[landed_tool(client, owner=...)])``. The
model calls it with the action it means to take; it gets back landed's verdict."""

from __future__ import annotations

from typing import Any

from pydantic_ai import Tool

from landed.agents.action import DESCRIPTION, make_action
from landed.agents.service import DEFAULT_WAIT_S, LandedTools
from landed.task.claim_contracts import ClaimContracts
from landed.temporal.client import Client

__all__ = ["landed_tool"]


def landed_tool(
    client: Client,
    *,
    owner: str = "agent",
    contracts: ClaimContracts | None = None,
    own_plans: bool = True,
    timeout_s: float = DEFAULT_WAIT_S,
    name: str = "landed_act",
) -> Tool[Any]:
    """A pydantic-ai Tool that runs the model's intended action as a landed task owned by
    ``owner`` and returns the verdict text (DONE / NOT DONE and why) to the model.

    ``contracts``: the operator's named contracts (``landed.task.claim_contracts_lint.
    load_claim_contracts``) the model may name instead of writing a proof plan;
    ``own_plans=False`` allows those only."""
    tools = LandedTools(client, owner=owner, contracts=contracts, own_plans=own_plans)
    return Tool(make_action(tools, timeout_s), name=name, description=DESCRIPTION)
