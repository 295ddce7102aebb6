"""What VerifyClaim decides: the task a claim stands for, the agent's report, and the verdict
of a claim that cannot be read back (pure functions, called by the workflow and unit tests).

A claim by outcome class is read back by the operator's contract for it (``claim_contracts``,
resolved by the runner) and graded like any task (``decisions.graded_receipt``): the agent's
cited proofs count as its own citations (``assemble.actor_artifact``), only the verifier's
readings of the operator's plan can reach verified. Any other claim is graded as ``landed
check`` grades a receipt (``receipts.grading.grade`` with the runner's trusted keys): the level
its own evidence proves, never higher; a claim that brought its own plan, or named a class the
runner cannot judge it by, at most P2 (DOD-2: a check the claimant chose is not a verdict).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from landed.receipts.grading import grade
from landed.receipts.ladder import ProofLevel, Status
from landed.receipts.model import Cost, LandedExtension, Receipt
from landed.signing import TrustStore
from landed.task.claim_contracts import ClaimOutcome, ResolvedClaim
from landed.task.claims_in import VerifyClaimInput
from landed.task.messages import ActReport
from landed.task.spec import ActSpec, TaskSpec

__all__ = [
    "CLAIM_ACT",
    "NO_READ_BACK",
    "SELF_CHOSEN",
    "claim_outcome",
    "claim_report",
    "claim_spec",
    "evidence_receipt",
    "no_read_back_reason",
]

#: The act a claim's task names: none ran under landed, the agent acted on its own.
CLAIM_ACT = "landed.claim"
#: The finding of a claim settled without a read-back.
NO_READ_BACK = (
    "DOD-2: the claim could not be read back ({why}); it settles at the level its own "
    "evidence proves"
)

#: The finding of a claim that brought its own plan: graded at most P2, never read as proof.
SELF_CHOSEN = (
    "DOD-2: the claim brought its own proof_plan, a check the claimant chose (a constant or a "
    "count already there would pass it): it is not read back as proof and settles at most P2; "
    "name an outcome class of the operator's claim contracts with its params instead"
)
#: The highest the evidence of a claim not judged by an operator's contract may reach.
_CAP = ProofLevel.P2
_CAP_STATUS = Status.BUILT


def claim_outcome(inp: VerifyClaimInput) -> ClaimOutcome | None:
    """What the runner is asked to judge the claim by: its outcome class, or None."""
    if not inp.can_read_back or inp.outcome_class is None:
        return None
    return ClaimOutcome(
        outcome_class=inp.outcome_class, params=inp.params, contracts_sha256=inp.contracts_sha256
    )


def claim_spec(inp: VerifyClaimInput, resolved: ResolvedClaim | None = None) -> TaskSpec:
    """The task the claim stands for: its outcome and the operator's plan for it (none until
    the runner resolved one), no act, no before-state."""
    claim = inp.claim
    plan = resolved.proof_plan if resolved is not None and resolved.refused is None else []
    return TaskSpec(
        task_id=claim.task_id,
        owner=_plain(claim.owner) or "unknown-agent",
        outcome=(resolved.outcome if plan and resolved else None)
        or claim.outcome
        or "(the claim names no outcome)",
        target=claim.target,
        proof_plan=plan,
        act=ActSpec(name=CLAIM_ACT),
        # The act happened before landed heard of it: there is no before-state to read.
        pre_read=False,
        loop=inp.loop,
    )


def claim_report(inp: VerifyClaimInput) -> ActReport:
    """The agent's words as an act's report: evidence for the verdict, never the verdict."""
    claim = inp.claim
    cost = claim.cost or Cost()
    try:
        return ActReport(
            claimed_status=claim.claimed_status,
            report=claim.report or "",
            artifacts=list(claim.proof),
            exit_code=claim.exit_code,
            cost=cost,
            actor=_actor(claim),
        )
    except ValueError:
        # A negative or non-finite cost: dropped rather than lowering every other task's
        # cost per verified task; the rest of the claim still counts.
        return ActReport(
            claimed_status=claim.claimed_status,
            report=claim.report or "",
            artifacts=list(claim.proof),
            exit_code=claim.exit_code,
            actor=_actor(claim),
        )


def evidence_receipt(
    inp: VerifyClaimInput,
    *,
    why: str,
    runner: str,
    run_id: str,
    trusted: TrustStore,
    settled_at: datetime,
) -> Receipt:
    """The claim graded on its own evidence, as ``landed check --trust`` grades it; a claim
    that chose its own check, or whose outcome class no contract judges, at most P2."""
    claim = inp.claim
    result = grade(claim, signature_ok=trusted.signature_ok)
    findings = [f"{f.rule}: {f.message}" for f in result.findings]
    findings.append(NO_READ_BACK.format(why=why))
    capped = bool(inp.proof_plan) or inp.outcome_class is not None
    if inp.proof_plan and inp.outcome_class is None:
        findings.append(SELF_CHOSEN)
    level, status, meets = result.proof_level, result.proven_status, result.meets_bar
    if capped and (level > _CAP or status.rank > _CAP_STATUS.rank):
        level, meets = min(level, _CAP), False
        status = _CAP_STATUS if status.rank > _CAP_STATUS.rank else status
    own: dict[str, Any] = claim.landed.model_dump() if claim.landed else {}
    ext = LandedExtension.model_validate(
        {
            **own,
            "attempt": inp.attempt,
            "loop": inp.loop,
            "spec_sha256": inp.digest,
            # A signature binds the run it was made for: the claim's own run id is kept.
            "run_id": own.get("run_id") or run_id,
            "pre_read": False,
            "claim_kind": inp.declared_kind or inp.kind,
            **({"outcome_class": inp.outcome_class} if inp.outcome_class else {}),
            "rung": status.value,
            "proof_level": level.label,
            "meets_bar": meets,
            "findings": findings,
        }
    )
    update = {
        "verdict": status.value,
        "verdict_by": runner,
        "settled_at": settled_at,
        "landed": ext,
    }
    return claim.model_copy(update=update)


def no_read_back_reason(inp: VerifyClaimInput) -> str | None:
    """Why the claim cannot be read back, or None when it can (the runner may still refuse
    its outcome class: ``ResolvedClaim.refused``)."""
    if inp.kind == "unknown":
        return f"its kind {inp.declared_kind!r} is not one landed reads (receipt, log, contract)"
    if inp.outcome_class is None:
        if inp.proof_plan:
            return "its proof_plan is the claimant's own"
        return "it names no outcome class (params) and carries no proof_plan"
    return None


def _actor(claim: Receipt) -> str | None:
    actor = claim.landed.model_dump().get("actor") if claim.landed else None
    return actor if isinstance(actor, str) and actor else None


def _plain(owner: str | None) -> str | None:
    if owner is None or not owner.strip():
        return None
    return "".join(c for c in owner if ord(c) >= 32 and not 127 <= ord(c) < 160)[:200] or None
