"""The one tool a framework's agent calls to act through landed: the intended action in, the
verdict text out. ``landed.agents.pydantic_ai``, ``landed.agents.openai_agents`` and
``landed.agents.pydantic_ai_temporal`` wrap the same function, so every framework's model sees
the same parameters and the same answers."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from landed.agents.service import DEFAULT_WAIT_S, AgentToolError, LandedTools

__all__ = ["DESCRIPTION", "Action", "action_over", "make_action"]

Action = Callable[..., Awaitable[str]]
#: What an action does with the model's arguments (as a mapping): the verdict text, or
#: AgentToolError naming the fix.
Acting = Callable[[dict[str, Any]], Awaitable[str]]

DESCRIPTION = (
    "Do an action through landed and get back whether it is really done. landed runs the act, "
    "reads the result back from the system where it lives, and answers DONE or NOT DONE with "
    "one sentence of why: report that answer, not your own belief."
)


def make_action(tools: LandedTools, timeout_s: float = DEFAULT_WAIT_S) -> Action:
    """The tool function over ``tools``; it waits at most ``timeout_s`` for each verdict."""

    async def acting(intent: dict[str, Any]) -> str:
        return await tools.act(intent, timeout_s)

    return action_over(acting)


def action_over(acting: Acting) -> Action:
    """The tool function that hands the model's arguments to ``acting``. A refused action
    comes back as text starting NOT DONE that names the fix (the model can correct its call),
    never as an exception."""

    async def landed_act(
        act: str,
        input: dict[str, Any],
        outcome: str = "",
        proof_plan: list[dict[str, Any]] | None = None,
        contract: str | None = None,
        params: dict[str, str | int | float | bool] | None = None,
        task_id: str | None = None,
    ) -> str:
        """Do an action through landed and get back whether it is really done.

        Args:
            act: The registered act to run, e.g. shop.add_orders.
            input: The act's input, a JSON object.
            outcome: The after-state that must be true afterwards, in words.
            proof_plan: How to read the result back: a list of landed contracts, each with
                action, probe (kind, source, query, params) and expect (type, value).
            contract: Instead of proof_plan, the name of a contract the operator declared.
            params: The named contract's parameter values.
            task_id: A task id to attach to an earlier call instead of acting again.
        """
        intent = {
            "act": act,
            "input": input,
            "outcome": outcome,
            "proof_plan": proof_plan,
            "contract": contract,
            "params": params or {},
            "task_id": task_id,
        }
        try:
            return await acting(intent)
        except AgentToolError as exc:
            return f"NOT DONE: {exc}"

    return landed_act
