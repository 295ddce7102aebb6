"""The task's decisions that are plain functions of data: claims, reconciling, budgets, keys.

The workflow orchestrates (it schedules steps and records what they answer); what follows from
an answer is decided here, so it has unit tests of its own and no Temporal. Anything the
workflow reads from Temporal (the time, the run id) is passed in.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import NamedTuple

from landed.probes.contract import Observation, Outcome
from landed.receipts.grading import grade
from landed.receipts.model import LandedExtension, ProofItem, Receipt
from landed.receipts.verdict import (
    PlanStep,
    TaskVerdict,
    hold_to_confirmation,
    hold_to_frames,
    hold_to_plan,
    hold_to_run,
)
from landed.signing import TrustStore
from landed.task.assemble import assemble_receipt, unknown_write_report
from landed.task.frames import frame_checks
from landed.task.messages import ActReport, ClaimOutput, VerifyReading
from landed.task.readings import nothing_landed
from landed.task.spec import TaskSpec

__all__ = [
    "ClaimDecision",
    "Reconciled",
    "RunFacts",
    "cancelled_before_act_report",
    "graded_receipt",
    "judge_claim",
    "ledger_tries",
    "past_cap",
    "read_budget",
    "reconcile",
    "remaining",
    "signed_key_id",
    "sole_key_id",
    "verify_failed",
]


def ledger_tries(
    budget: timedelta,
    *,
    initial: timedelta,
    backoff: float,
    longest_wait: timedelta,
    one_try_at_most: timedelta,
) -> tuple[int, timedelta]:
    """How many tries of a ledger step, and how long one may take, so that all tries together,
    and the waits between them, end within ``budget``.

    Measured on sdk-python 1.35: a local activity's schedule_to_close does not bound its
    retries (one that kept raising was still retrying long after it), and a try that hangs is
    cut at schedule_to_close but often retried with a fresh window. So the bound is counted
    here: the waits get half the budget (as many tries as the backoff fits in it), and the
    tries share the other half. Counted from the policy alone, so replay computes the same.
    """
    tries, waited, wait = 1, timedelta(0), initial
    while waited + wait <= budget / 2:
        waited += wait
        tries += 1
        wait = min(wait * backoff, longest_wait)
    one_try = max(min(one_try_at_most, budget / (2 * tries)), timedelta(milliseconds=500))
    return tries, one_try


def remaining(deadline: datetime, now: datetime) -> timedelta | None:
    """The time left before ``deadline``; None when too little is left to start a step."""
    left = deadline - now
    return left if left > timedelta(seconds=1) else None


def read_budget(deadline: datetime | None, now: datetime, verify: timedelta) -> timedelta:
    """How long a read may wait for a verifier: until the time cap plus one read's time,
    counted once for the task, not once per read (a pre-read that used it all leaves the
    read-back a second). A timeout is no command of its own: replay compares none."""
    if deadline is None:
        return verify
    return max(deadline - now + verify, timedelta(seconds=1))


def past_cap(deadline: datetime | None, now: datetime, wait: timedelta) -> bool:
    """Waiting ``wait`` and reading again would end past the time cap (GOV-4)."""
    return deadline is not None and now + wait >= deadline


def verify_failed(cause: str, *, no_verifier_answered: bool, queue: str) -> str:
    """Why a read observed nothing when the verifier could not be reached or crashed every time;
    when no verifier took the read before its deadline, how to get one."""
    why = f"verify failed: {cause}"
    if no_verifier_answered:
        why += (
            f"; no verifier answered on task queue {queue!r} before the read's deadline: check "
            "that `landed worker verifier` runs, polls that queue, and finishes a read within "
            "timeouts.verify"
        )
    return why


def signed_key_id(proof: ProofItem) -> str | None:
    """The key id a proof claims to be signed with, if it names one.

    A reply can carry any shape here: a malformed signature is the grade's to refuse, never an
    exception that fails the workflow task on every retry.
    """
    signature = (proof.landed or {}).get("signature")
    key_id = signature.get("key_id") if isinstance(signature, dict) else None
    return None if key_id is None else str(key_id)


def sole_key_id(proofs: Sequence[ProofItem]) -> str | None:
    """The receipt's key id: the one key every signed proof names, None for none or several."""
    key_ids = sorted({k for p in proofs if (k := signed_key_id(p)) is not None})
    return key_ids[0] if len(key_ids) == 1 else None


class ClaimDecision(NamedTuple):
    """What the ledger's answer to a claim means for the run."""

    may_act: bool
    #: The ledger's receipt when another run settled the task: it is the answer.
    settled: Receipt | None = None
    #: Another run of the task id that was about to act and never settled.
    lost_run: str | None = None
    act_error: str | None = None
    unknown_write: str | None = None


def judge_claim(out: ClaimOutput) -> ClaimDecision:
    """May the run act on this claim answer; if not, what it settles with."""
    if out.settled is not None:
        return ClaimDecision(may_act=False, settled=out.settled)
    if out.other_run is None:
        return ClaimDecision(may_act=True)
    when = out.other_at.isoformat() if out.other_at else "an unknown time"
    return ClaimDecision(
        may_act=False,
        lost_run=out.other_run,
        act_error=(
            f"run {out.other_run} of this task id was about to act at {when} and closed without "
            "settling; its act may have run"
        ),
        unknown_write=(
            f"run {out.other_run} of this task id was about to act at {when} and closed without "
            "settling (terminated, failed or reset); its act may have run, so this run did not "
            "run it again, and with no before-state from before that act the read-back cannot "
            "show the act made what it finds: not verified, a person must reconcile it"
        ),
    )


class Reconciled(NamedTuple):
    """What a read-back after an act error decided: the report to settle with (None: nothing
    landed, the act may run again) and the DOD-10 finding's reason, if any."""

    report: ActReport | None
    unknown_write: str | None = None


def reconcile(
    spec: TaskSpec,
    readings: Mapping[int, VerifyReading],
    before: Sequence[Observation | None],
    error: str,
) -> Reconciled:
    """Decide from the read-back after an act error (readings already held to their steps)
    whether the act may run again (DOD-10): only when nothing of its write can have landed."""
    every = range(len(spec.proof_plan))
    if every and all(readings[i].observation.outcome == Outcome.PASS for i in every):
        return Reconciled(unknown_write_report())  # it landed: settle it, never act again
    unseen = [i for i in every if readings[i].observation.outcome == Outcome.PROBE_ERROR]
    if unseen:
        # The read-back saw nothing (after its bounded re-reads): "not observed" is not
        # "not landed", so running the act again could write a second copy.
        steps = ", ".join(f"#{i + 1} {spec.proof_plan[i].action!r}" for i in unseen)
        why = (
            f"the act ended with an error and the read-back could not observe plan step "
            f"{steps}; whether the write landed is unknown, so the act was not run again: a "
            f"person must reconcile it against the system of record"
        )
        report = f"act did not complete: {error}; the outcome is unknown"
        return Reconciled(ActReport(claimed_status="failed", report=report), why)
    changed = [i for i in every if not nothing_landed(readings[i], before[i])]
    if changed:
        # A step passed, or reads other than the act found it (part of a count, more than
        # asked, a changed page): running the act again could write twice.
        steps = ", ".join(
            f"#{i + 1} {spec.proof_plan[i].action!r} ({readings[i].observation.outcome})"
            for i in changed
        )
        why = (
            f"the act ended with an error and the read-back shows the system of record "
            f"changed, or cannot show it did not (plan step {steps}); the act was not run "
            f"again, so nothing is written twice: a person must reconcile it"
        )
        report = f"act did not complete: {error}; part of the outcome may have landed"
        return Reconciled(ActReport(claimed_status="failed", report=report), why)
    return Reconciled(None)  # nothing landed: the next attempt carries the same idempotency key


def cancelled_before_act_report() -> ActReport:
    """The report of a task cancelled before its act ran: superseded, nothing done."""
    return ActReport(
        claimed_status="superseded",
        report="The task was cancelled before its act ran; nothing was done.",
    )


@dataclass(frozen=True)
class RunFacts:
    """What the run knows that goes into its receipt beside the report and the read-backs."""

    #: The act's last attempt that started (0: none did; the receipt says 1).
    attempt: int
    pre_read: bool
    spec_sha256: str
    #: The run id readings were signed under (kept across resets).
    run_id: str
    #: The runner's identity: the verdict's issuer.
    runner: str
    act_error: str | None = None
    lost_run: bool = False
    unknown_write: str | None = None
    cancelled: bool = False
    #: Each frame's reading before and after the act, held to its frame (None: not read).
    frames_before: tuple[Observation | None, ...] = ()
    frames_after: tuple[Observation | None, ...] = ()
    #: Steps whose confirmation read differed from the read that passed (durability).
    unconfirmed: tuple[str, ...] = ()
    #: What the durability reads did (``landed.durability`` on the receipt), None: none ran.
    durability: Mapping[str, object] | None = None
    # --- fleet: what the fleet's rules add under ``landed`` (landed.governance.receipt) ---
    fleet: Mapping[str, object] | None = None


def graded_receipt(
    spec: TaskSpec,
    report: ActReport,
    proofs: Sequence[ProofItem],
    facts: RunFacts,
    *,
    settled_at: datetime,
    trusted: TrustStore,
) -> Receipt:
    """The task's receipt graded by the checker's code (``grade``), then held to what the run
    knows (``landed.receipts.verdict``): the verdict the workflow settles."""
    draft = assemble_receipt(
        spec,
        report,
        list(proofs),
        attempt=max(facts.attempt, 1),
        key_id=sole_key_id(proofs),
        settled_at=settled_at,
        extra={
            "pre_read": facts.pre_read,
            "spec_sha256": facts.spec_sha256,
            "act_error": facts.act_error,
            "run_id": facts.run_id,
            "lifecycle": "verified",
            **({"durability": dict(facts.durability)} if facts.durability is not None else {}),
            **(dict(facts.fleet) if facts.fleet is not None else {}),
        },
    )
    result = grade(draft, signature_ok=trusted.signature_ok)
    findings = tuple(f"{f.rule}: {f.message}" for f in result.findings)
    verdict = TaskVerdict(result.proven_status, result.meets_bar, findings)
    steps = [PlanStep(c.action, p.result) for c, p in zip(spec.proof_plan, proofs, strict=False)]
    verdict = hold_to_plan(verdict, result.claims_done, steps)
    frames = frame_checks(spec, facts.frames_before, facts.frames_after)
    if facts.attempt >= 1:
        # No act ran (cancelled or capped before it): nothing it could have changed.
        verdict = hold_to_frames(verdict, result.claims_done, frames)
    verdict = hold_to_run(
        verdict,
        lost_run=facts.lost_run,
        unknown_write=facts.unknown_write,
        cancelled=facts.cancelled,
    )
    verdict = hold_to_confirmation(verdict, facts.unconfirmed)
    ext = LandedExtension.model_validate(
        {
            **(draft.landed.model_dump() if draft.landed else {}),
            "rung": verdict.status.value,
            "proof_level": result.proof_level.label,
            "meets_bar": verdict.meets_bar,
            "findings": list(verdict.findings),
            # Which frames held: only on receipts of tasks that declare frames.
            **(
                {"frames": [{"action": f.action, "held": f.problem is None} for f in frames]}
                if frames and facts.attempt >= 1
                else {}
            ),
        }
    )
    update = {"verdict": verdict.status.value, "verdict_by": facts.runner, "landed": ext}
    return draft.model_copy(update=update)
