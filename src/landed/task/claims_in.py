"""Claims from agents that act outside Temporal: one JSONL line in, one claim to verify out.

A claim is what an agent says it did, sent after the fact (``landed reconcile``). Three kinds:

- ``receipt``: a DoD receipt (it has a ``dod`` key, or says ``"kind": "receipt"``);
- ``log``: a loose log line (``{"task_id": ..., "claimed_status": "done"}``, no proof);
- ``contract``: an outcome the agent says now holds: an outcome class of the operator's claim
  contracts and its parameters (``outcome`` + ``params``), or a probe plan of its own
  (``outcome`` + ``proof_plan``) (``claimed_status`` defaults to ``done``).

Any kind may name an outcome class with ``params``: the runner reads it back by the contract the
operator declared for that class (``claim_contracts``). A plan the claim brings itself is a check
the claimant chose: it is never read back as proof and settles at most P2; so does a claim with
neither, or of a kind landed does not know (``claim_grade``).
Everything here is a pure function of the line's bytes: the CLI, the workflow and the unit
tests call it alike.
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from landed.probes.contract import Contract
from landed.receipts.intake import normalize_loose
from landed.receipts.model import Receipt
from landed.task.claim_contracts import (
    CLASS_NAME,
    ClaimContracts,
    ClaimOutcome,
    ParamValue,
    judge_claim,
)
from landed.util.strictjson import DuplicateKey, loads

__all__ = [
    "CLAIM_KINDS",
    "MAX_CLAIM_BYTES",
    "BadClaim",
    "ClaimKind",
    "VerifyClaimInput",
    "claim_digest",
    "claim_of",
    "claim_workflow_id",
    "parse_claim",
    "pin_claim",
]

#: The longest line read as one claim; a longer one is reported and skipped unbuffered.
MAX_CLAIM_BYTES: Final = 256 << 10

ClaimKind = Literal["receipt", "log", "contract", "unknown"]
CLAIM_KINDS: Final = ("receipt", "log", "contract")

# The TaskSpec's own task id rule: a claim settles under the agent's task id.
_TASK_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:@/-]*$")
_PLAN = TypeAdapter(list[Contract])
_ONE_OBJECT = "each line must hold one JSON object: a DoD receipt, a loose log or a contract"


class BadClaim(BaseModel):
    """A line that is no claim: where it is and what to fix."""

    model_config = ConfigDict(frozen=True)

    line: int
    reason: str


class VerifyClaimInput(BaseModel):
    """What the VerifyClaim workflow is started with: the claim as a receipt, and its plan."""

    kind: ClaimKind
    declared_kind: str | None = Field(
        default=None, description="What the line called its kind, when landed does not know it."
    )
    claim: Receipt = Field(description="The claim in receipt form: the agent's words, as given.")
    attempt: int = Field(default=1, ge=1, description="Which attempt of the task it claims.")
    proof_plan: list[Contract] = Field(
        default_factory=list, description="A plan the claimant supplied: never read as proof."
    )
    outcome_class: str | None = Field(
        default=None, description="The operator's outcome class the claim names (its params)."
    )
    params: dict[str, ParamValue] = Field(default_factory=dict)
    contracts_sha256: str | None = Field(
        default=None,
        description="Set by `landed reconcile --contracts`: the runner judges by this file only.",
    )
    loop: str | None = Field(default=None, description="The loop the claimed task belongs to.")
    digest: str = Field(description="claim_digest(): which task the claim is of.")
    line: int | None = Field(default=None, description="Where it came from (not its identity).")

    @property
    def task_id(self) -> str:
        return self.claim.task_id

    @property
    def can_read_back(self) -> bool:
        """An operator's outcome class to read by, and a kind landed knows how to take."""
        return self.outcome_class is not None and self.kind != "unknown"


def claim_workflow_id(task_id: str, attempt: int) -> str:
    """One VerifyClaim per task attempt: a replayed stream starts nothing twice. '#' is not
    allowed in a task id, so no task's own workflow can take it."""
    return f"{task_id}#claim-{attempt}"


def claim_of(asker: str, task_id: str) -> bool:
    """The workflow ``asker`` is a VerifyClaim of task ``task_id`` (the verifier reads for it,
    as it does for the task's own workflow and its recheck)."""
    prefix = f"{task_id}#claim-"
    return asker.startswith(prefix) and asker[len(prefix) :].isdigit()


def claim_digest(
    claim: Receipt, plan: list[Contract], params: dict[str, ParamValue] | None = None
) -> str:
    """sha256 of what the claim is about (task id, owner, outcome, target, plan, and an outcome
    class's parameters), not of what it says (status, report): two attempts of one task are one
    task to the ledger, and a line that reuses a task id for other work is told apart."""
    body: dict[str, Any] = {
        "task_id": claim.task_id,
        "owner": claim.owner,
        "outcome": claim.outcome,
        "target": claim.target,
        "proof_plan": [c.model_dump(mode="json", exclude_defaults=True) for c in plan],
    }
    if params is not None:
        body["params"] = params
    text = json.dumps(body, sort_keys=True, separators=(",", ":"))
    return "claim1:" + hashlib.sha256(text.encode()).hexdigest()


def parse_claim(line: int, data: bytes) -> VerifyClaimInput | BadClaim | None:
    """One line of a claim stream: the claim, why it is none, or None for a blank line."""
    if not data.strip():
        return None
    try:
        value = loads(data)
    except DuplicateKey as exc:
        return BadClaim(line=line, reason=str(exc))
    except RecursionError:
        return BadClaim(line=line, reason=f"JSON nested too deeply to read; {_ONE_OBJECT}")
    except ValueError as exc:
        return BadClaim(line=line, reason=f"not valid JSON ({exc}); {_ONE_OBJECT}")
    if not isinstance(value, dict):
        return BadClaim(line=line, reason=f"a JSON {type(value).__name__} here; {_ONE_OBJECT}")
    try:
        return _claim(line, value)
    except _Refused as exc:
        return BadClaim(line=line, reason=str(exc))


def pin_claim(inp: VerifyClaimInput, contracts: ClaimContracts) -> VerifyClaimInput | BadClaim:
    """``landed reconcile --contracts``: a claim its file cannot judge is a bad line, named
    before anything starts; one it can is pinned to the file, so a runner holding other
    contracts refuses it instead of judging it by them."""
    if inp.outcome_class is None:
        return inp
    asked = ClaimOutcome(outcome_class=inp.outcome_class, params=inp.params)
    judged = judge_claim(contracts, asked)
    if judged.refused is not None:
        return BadClaim(line=inp.line or 0, reason=judged.refused)
    return inp.model_copy(update={"contracts_sha256": contracts.sha256})


class _Refused(ValueError):
    pass


def _claim(line: int, value: dict[str, Any]) -> VerifyClaimInput:
    kind, declared = _kind_of(value)
    task_id = value.get("task_id", value.get("id"))
    if isinstance(task_id, int) and not isinstance(task_id, bool):
        task_id = str(task_id)
    if not isinstance(task_id, str) or not task_id:
        raise _Refused(
            "no task_id (nor id): a claim must name the task it is about, so the same claim "
            'sent twice is verified once; add "task_id": "<the agent\'s task id>"'
        )
    if len(task_id) > 200 or not _TASK_ID.match(task_id):
        raise _Refused(
            f"task_id {task_id[:60]!r} is not a landed task id: up to 200 letters, digits and "
            "_.:@/- starting with a letter or digit; rename it"
        )
    plan = _plan_of(value)
    params = _params_of(value, plan)
    record = {k: v for k, v in value.items() if k not in ("kind", "proof_plan", "params")}
    if kind == "contract":
        record.setdefault("claimed_status", "done")
    try:
        claim = Receipt.model_validate(normalize_loose({**record, "task_id": task_id}, line))
    except ValidationError as exc:
        raise _Refused(_explain(exc)) from None
    return VerifyClaimInput(
        kind=kind,
        declared_kind=declared,
        claim=claim,
        attempt=_attempt_of(value, claim),
        proof_plan=plan,
        outcome_class=claim.outcome if params is not None else None,
        params=params or {},
        loop=_loop_of(value, claim),
        digest=claim_digest(claim, plan, params),
        line=line,
    )


def _kind_of(value: dict[str, Any]) -> tuple[ClaimKind, str | None]:
    declared = value.get("kind")
    if declared is not None:
        if declared in CLAIM_KINDS:
            return declared, None
        # Settled at its evidence level, never dropped: what it says is still a claim.
        return "unknown", str(declared)[:100]
    if "dod" in value:
        return "receipt", None
    said = any(k in value for k in ("claimed_status", "status", "state"))
    if ("proof_plan" in value or "params" in value) and not said:
        return "contract", None
    return "log", None


def _plan_of(value: dict[str, Any]) -> list[Contract]:
    plan = value.get("proof_plan", [])
    try:
        return _PLAN.validate_python(plan)
    except ValidationError as exc:
        raise _Refused(f"proof_plan: {_explain(exc)}") from None


def _params_of(value: dict[str, Any], plan: list[Contract]) -> dict[str, ParamValue] | None:
    """An outcome class's parameters: flat JSON scalars, named in ``outcome``; or None."""
    if "params" not in value:
        return None
    params, outcome = value["params"], value.get("outcome")
    if plan:
        raise _Refused(
            "a claim names an outcome class (params) or brings a proof_plan, not both; drop "
            "the proof_plan: the operator's contract for the class is what is read"
        )
    if not isinstance(outcome, str) or not CLASS_NAME.match(outcome):
        raise _Refused(
            f"outcome {str(outcome)[:60]!r}: with params, outcome names an outcome class of the "
            "operator's claim contracts (dotted lower-case words, e.g. orders.created)"
        )
    if not isinstance(params, dict) or len(params) > 32:
        raise _Refused('params must be an object of at most 32 values: {"batch": "b-17"}')
    for key, v in params.items():
        if not isinstance(v, str | int | float) or (isinstance(v, str) and len(v) > 500):
            raise _Refused(
                f"params.{key[:40]}: a parameter is a string (up to 500 characters), a number "
                "or a boolean; fix it"
            )
    return dict(params)


def _attempt_of(value: dict[str, Any], claim: Receipt) -> int:
    attempt = value.get("attempt", claim.landed.attempt if claim.landed else 1)
    if isinstance(attempt, bool) or not isinstance(attempt, int) or not 1 <= attempt <= 10_000:
        raise _Refused(f"attempt {attempt!r} must be a whole number from 1 to 10000; fix it")
    return attempt


def _loop_of(value: dict[str, Any], claim: Receipt) -> str | None:
    loop = value.get("loop", claim.landed.loop if claim.landed else None)
    return loop if isinstance(loop, str) and loop else None


def _explain(exc: ValidationError) -> str:
    first = exc.errors(include_url=False, include_input=False, include_context=False)[0]
    field = ".".join(str(p) for p in first["loc"]) or "the record"
    if first["type"] == "missing" and first["loc"] == ("claimed_status",):
        return (
            "no claimed_status (nor status or state): a log or receipt claim must say what it "
            'claims; add "claimed_status": "done" (or the status it reached)'
        )
    return f"{field}: {first['msg']}; fix the field (see `landed schema receipt`)"
