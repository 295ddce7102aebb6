"""The action a model means to take, as a landed task: an act (name and input) and how to
read it back, either a proof plan the model writes or a contract the operator named (the
check is then the operator's; the model only picks its values). Pure code."""

from __future__ import annotations

import re
import uuid
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from landed.task.claim_contracts import ClaimContracts, ClaimRefused, ParamValue, resolve
from landed.task.spec import TaskSpec
from landed.task.validate import check_spec

__all__ = ["Intent", "IntentError", "intent_task", "new_task_id", "to_task"]


class IntentError(ValueError):
    """The intended action cannot become a task; the message names the fix."""


class Intent(BaseModel):
    """What a model asks landed to do, and how the result is to be read back."""

    model_config = ConfigDict(extra="forbid")

    act: str = Field(min_length=1, description="The registered act to run (e.g. shop.add_orders).")
    input: dict[str, Any] = Field(default_factory=dict, description="The act's input.")
    outcome: str = Field(default="", description="The after-state that must be true, in words.")
    proof_plan: list[dict[str, Any]] | None = Field(
        default=None, description="How to read the result back (landed Contract objects)."
    )
    contract: str | None = Field(
        default=None, description="A contract the operator declared, in place of a proof plan."
    )
    params: dict[str, ParamValue] = Field(
        default_factory=dict, description="The named contract's parameter values."
    )
    task_id: str | None = Field(
        default=None, description="Reuse a task id to attach to that task instead of acting again."
    )


def intent_task(
    intent: Intent | Mapping[str, Any],
    *,
    owner: str,
    contracts: ClaimContracts | None = None,
    own_plans: bool = True,
    id_token: str | None = None,
) -> TaskSpec:
    """What a framework tool's call asks for (its arguments, or an Intent) as a TaskSpec;
    IntentError naming the fix when it is not an intent or cannot be a task."""
    try:
        parsed = intent if isinstance(intent, Intent) else Intent.model_validate(intent)
    except ValueError as exc:  # arguments the Intent refuses
        raise IntentError(str(exc)) from None
    return to_task(parsed, owner=owner, contracts=contracts, own_plans=own_plans, id_token=id_token)


def to_task(
    intent: Intent,
    *,
    owner: str,
    contracts: ClaimContracts | None = None,
    own_plans: bool = True,
    id_token: str | None = None,
) -> TaskSpec:
    """The TaskSpec for ``intent``; IntentError naming the fix when it cannot be one.
    ``id_token``: the random part of a new task id (workflow code passes its own
    deterministic one, ``workflow.uuid4()``)."""
    plan, outcome = _plan(intent, contracts, own_plans)
    spec = {
        "task_id": intent.task_id or new_task_id(owner, id_token),
        "owner": owner,
        "outcome": outcome,
        "act": {"name": intent.act, "input": intent.input},
        "proof_plan": plan,
    }
    try:
        return check_spec(spec).spec
    except ValueError as exc:  # TaskSpecError: the fields and reasons
        raise IntentError(str(exc)) from None


def new_task_id(owner: str, token: str | None = None) -> str:
    """A fresh task id that names its owner, in the characters a task id may hold; its random
    part is ``token`` (hex) when given."""
    name = re.sub(r"[^A-Za-z0-9_.:@/-]+", "-", owner).strip("-._:@/")[:80] or "agent"
    return f"{name}-{(token or uuid.uuid4().hex)[:12]}"


def _plan(
    intent: Intent, contracts: ClaimContracts | None, own_plans: bool
) -> tuple[list[Any], str]:
    if intent.contract and intent.proof_plan:
        raise IntentError("give either contract (with params) or proof_plan, not both")
    if intent.contract:
        try:
            words, plan = resolve(contracts, intent.contract, dict(intent.params))
        except ClaimRefused as exc:
            raise IntentError(str(exc)) from None
        return [c.model_dump(mode="json") for c in plan], intent.outcome or words
    if not own_plans:
        raise IntentError(
            "this tool reads results back only by the operator's contracts: name one in "
            "contract, with its params"
        )
    if not intent.proof_plan:
        raise IntentError(
            "say how to read the result back: a proof_plan (a list of contracts: action, "
            "probe, expect) or the name of an operator's contract"
        )
    if not intent.outcome:
        raise IntentError("say the outcome: the after-state that must be true, in words")
    return list(intent.proof_plan), intent.outcome
