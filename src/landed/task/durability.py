"""Whether a verified outcome holds: the confirmation read, late landing and the lifecycle.

Plain functions of data (the workflow passes in the readings and the time); see docs/tasks.md,
section "Verdicts that hold", for why each exists.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any, Literal

from pydantic import BaseModel, Field

from landed.probes.contract import Observation, Outcome
from landed.receipts.model import LandedExtension, ProofItem, Receipt
from landed.receipts.verdict import FrameCheck, frame_findings
from landed.task.messages import Routing, VerifyReading
from landed.task.spec import TaskSpec

__all__ = [
    "LIFECYCLES",
    "Lifecycle",
    "RecheckInput",
    "all_pass",
    "changed",
    "confirm_wait",
    "landing_wait",
    "lifecycle_receipt",
    "not_landed_yet",
    "pending",
    "recheck_holds",
    "recheck_of",
    "recheck_workflow_id",
    "settle_window",
    "unconfirmed_findings",
]

#: The stage a receipt's verdict is at: pending (not settled), verified (settled from the
#: read-back, its verdict whatever it is), confirmed (a recheck after the horizon found it
#: holding), reversed (a recheck found a verified outcome no longer holds).
Lifecycle = Literal["pending", "verified", "confirmed", "reversed"]
LIFECYCLES: tuple[str, ...] = ("pending", "verified", "confirmed", "reversed")

# Read again while the window is open: the outcome may not be visible yet (replica lag, a
# queue). Any other outcome is final at once (a duplicate or a vacuous write will not go away).
_NOT_YET = (Outcome.EMPTY, Outcome.MISMATCH)


def settle_window(spec: TaskSpec, index: int) -> timedelta:
    """How long after the act step ``index``'s outcome may take to be visible (0: none)."""
    return spec.proof_plan[index].settle_window or timedelta(0)


def confirm_wait(spec: TaskSpec, indexes: list[int]) -> timedelta:
    """The quiet interval before one confirmation read of ``indexes``: the longest any of
    them asks for (one read of every step, not one per step)."""
    default = spec.durability.confirm_after
    waits = [spec.proof_plan[i].confirm_after for i in indexes]
    return max((default if w is None else w for w in waits), default=default)


def not_landed_yet(
    spec: TaskSpec, readings: Mapping[int, VerifyReading], elapsed: timedelta
) -> list[int]:
    """Steps read as empty or mismatch whose settle window is still open ``elapsed`` after
    the act: they are read again, the others settle as read."""
    return [
        i
        for i, r in sorted(readings.items())
        if r.observation.outcome in _NOT_YET and settle_window(spec, i) > elapsed
    ]


def landing_wait(
    spec: TaskSpec, pending: list[int], elapsed: timedelta, backoff: timedelta
) -> timedelta:
    """The wait before the next read of late steps: the backoff, cut to end with the last
    of their windows (so the final read happens as the window closes, not after it)."""
    left = max(settle_window(spec, i) for i in pending) - elapsed
    return max(min(backoff, left), timedelta(0))


def all_pass(readings: Mapping[int, VerifyReading], steps: int) -> bool:
    """Every plan step read back pass: the only reading a confirmation read is for."""
    return steps > 0 and all(
        i in readings and readings[i].observation.outcome == Outcome.PASS for i in range(steps)
    )


def _shown(obs: Observation) -> str:
    return f"{obs.outcome} ({obs.value!r})" if obs.value is not None else str(obs.outcome)


def changed(first: Observation, second: Observation) -> str | None:
    """How the second reading differs from the first, or None when it shows the same.

    Outcome and the judged value are compared, not the raw evidence: a page may carry a clock
    or a request id that differs on every read of an outcome that holds."""
    if first.outcome != second.outcome:
        return f"read {_shown(first)}, then {_shown(second)}"
    same = type(first.value) is type(second.value) and first.value == second.value
    return None if same else f"read {_shown(first)}, then {_shown(second)}"


def unconfirmed_findings(
    spec: TaskSpec,
    first: Mapping[int, VerifyReading],
    second: Mapping[int, VerifyReading],
    wait: timedelta,
) -> tuple[str, ...]:
    """One finding per step whose confirmation read differs from the read that passed."""
    out = []
    for i in sorted(first):
        how = changed(first[i].observation, second[i].observation) if i in second else "no read"
        if how is not None:
            out.append(
                f"unconfirmed: plan step #{i + 1} ({spec.proof_plan[i].action!r}) {how} "
                f"{wait.total_seconds():g} s later; an outcome that does not hold is not done"
            )
    return tuple(out)


def recheck_holds(
    readings: Mapping[int, VerifyReading],
    steps: int,
    frames: Sequence[FrameCheck | None] = (),
) -> Literal["confirmed", "reversed", "unobserved"]:
    """What a recheck after the horizon found: every step still passes and every frame reads
    as it did (confirmed), a step read something else or a frame changed (reversed), or a step
    or frame could not be observed (neither: fail closed, the verified receipt stays as it was
    and no confirmation is recorded). A frame seen changed reverses whatever else was unseen:
    a confirmation needs everything read, a reversal needs one thing seen not to hold.
    ``frames`` is ``landed.task.frames.recheck_frames``'s answer (None: not observed)."""
    if any(f is not None and f.problem is not None for f in frames):
        return "reversed"
    outcomes: list[Any] = [
        readings[i].observation.outcome if i in readings else None for i in range(steps)
    ]
    if any(o is None or o == Outcome.PROBE_ERROR for o in outcomes):
        return "unobserved"
    if not all(o == Outcome.PASS for o in outcomes):
        return "reversed"
    return "unobserved" if any(f is None for f in frames) else "confirmed"


def recheck_workflow_id(task_id: str) -> str:
    """The recheck's workflow id: '#' is not allowed in a task id, so no task can take it."""
    return f"{task_id}#recheck"


def recheck_of(asker: str, task_id: str) -> bool:
    """The workflow ``asker`` is the recheck of task ``task_id`` (the verifier reads for it)."""
    return asker == recheck_workflow_id(task_id)


class RecheckInput(BaseModel):
    """What the recheck needs of the settled task: its plan, routing, before-state, the act
    attempt its readings are signed for, the identities that acted, and the settled receipt."""

    spec: TaskSpec
    routing: Routing
    before: list[Observation | None]
    attempt: int = Field(ge=1)
    settled: Receipt
    actors: list[str] = Field(default_factory=list)
    frames_before: list[Observation | None] = Field(
        default_factory=list,
        description="Each frame's reading before the act (empty: a recheck started before "
        "rechecks read frames, which cannot confirm a task with frames).",
    )


def lifecycle_receipt(
    inp: RecheckInput,
    proofs: list[ProofItem],
    stage: Literal["confirmed", "reversed"],
    *,
    at: datetime,
    frames: Sequence[FrameCheck | None] = (),
) -> Receipt:
    """The row a recheck appends: the settled receipt with the recheck's read-backs in place
    of the settle's, at ``stage``; a reversal's verdict is ``reversed`` and says which step or
    frame (``frames``, as the recheck read them) no longer holds. The settled row stays as it
    was (the ledger is append-only)."""
    settled, steps = inp.settled, len(inp.spec.proof_plan)
    kept = settled.proof[: len(settled.proof) - steps] if steps else list(settled.proof)
    ext: dict[str, Any] = settled.landed.model_dump() if settled.landed else {}
    horizon = inp.spec.durability.recheck_after or timedelta(0)
    findings = list(ext.get("findings") or [])
    verdict = settled.verdict
    if stage == "reversed":
        verdict = "reversed"
        ext["meets_bar"] = False
        for i, proof in enumerate(proofs):
            if proof.result != Outcome.PASS.value:
                findings.append(
                    f"reversed: plan step #{i + 1} ({inp.spec.proof_plan[i].action!r}) read "
                    f"back pass when it settled and {proof.result} {horizon.total_seconds():g} s "
                    "later; the outcome did not hold"
                )
        # A frame the recheck could not read is no finding of change (its place is kept, so
        # each finding names its frame's number).
        findings.extend(frame_findings([f or FrameCheck("", None) for f in frames]))
    if frames:
        # Which frames the recheck saw hold (one it could not read holds nothing).
        ext["frames"] = [
            {"action": a.action, "held": f is not None and f.problem is None}
            for a, f in zip(inp.spec.frames, frames, strict=True)
        ]
    ext.update(
        lifecycle=stage,
        findings=findings,
        recheck={
            "horizon_s": horizon.total_seconds(),
            "settled_at": settled.settled_at.isoformat() if settled.settled_at else None,
        },
    )
    update = {
        "proof": [*kept, *proofs],
        "verdict": verdict,
        "verdict_by": inp.routing.runner,
        "settled_at": at,
        "landed": LandedExtension.model_validate(ext),
    }
    return settled.model_copy(update=update)


def pending(receipt: Receipt) -> Receipt:
    """A receipt the task has not settled yet (what its receipt query answers meanwhile): its
    lifecycle is pending."""
    if receipt.landed is None:
        return receipt
    ext = receipt.landed.model_copy(update={"lifecycle": "pending"})
    return receipt.model_copy(update={"landed": ext})
