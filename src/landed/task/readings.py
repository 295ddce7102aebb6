"""Which reading proves which plan step: the workflow's tests of a verifier's reading, as data.

The verifier signs what it was asked and what it saw; whoever can answer on its queue could ask
it something else (an easier expectation, no before-state) and hand back a genuine signature.
So every reading is held to the step it was asked for before it counts. These are plain
functions: the workflow passes in what it knows of the run (``ReadScope``), and a reading that
does not hold becomes "not observed" with the reason in its message.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from landed.probes.contract import Observation, Outcome, probe_digest
from landed.probes.expect import (
    LEGACY_MEANING,
    Judgement,
    judge_with_before,
    label_for,
    value_outcome,
)
from landed.signing import TrustStore, check_reading
from landed.task.assemble import proof_item
from landed.task.messages import VerifyReading
from landed.task.spec import TaskSpec

__all__ = [
    "ReadScope",
    "answers_request",
    "independent",
    "nothing_landed",
    "of_step",
    "still_to_read",
    "unobserved",
]


@dataclass(frozen=True)
class ReadScope:
    """What holding a reading to its step needs to know of the run."""

    spec: TaskSpec
    #: The runner's identity: it marks a reading not observed, and is that reading's checker.
    runner: str
    trusted: TrustStore
    #: The run id readings are requested and signed under (kept across resets).
    run_id: str
    #: When the read was asked: a not-observed reading carries it, so a grading that runs
    #: again (after a stalled runner) marks it with the same time and settles the same.
    asked_at: datetime


def unobserved(scope: ReadScope, index: int, why: str) -> VerifyReading:
    """Plan step ``index`` as not observed, with ``why`` as the observation's message."""
    contract = scope.spec.proof_plan[index]
    obs = Observation(
        outcome=Outcome.PROBE_ERROR,
        expectation=label_for(contract.probe, contract.expect),
        kind=contract.probe.kind,
        observer=scope.runner,
        observed_at=scope.asked_at,
        duration_ms=0.0,
        message=why,
    )
    return VerifyReading(
        index=index, observation=obs, proof=proof_item(contract, obs, checked_by=scope.runner)
    )


def independent(
    scope: ReadScope,
    reading: VerifyReading,
    before: Observation | None,
    actors: Sequence[str],
    attempt: int,
    *,
    signed_as: str | None = None,
) -> VerifyReading:
    """A reading counts only if another identity than the act's ``actors`` made it (DOD-2), and
    only as a reading of its plan step (``of_step``); else it is not observed."""
    if reading.proof.checked_by in actors:
        why = (
            f"read by the actor's identity {reading.proof.checked_by}; the actor can't grade itself"
        )
        return unobserved(scope, reading.index, why)
    return of_step(scope, reading, before, attempt, signed_as=signed_as)


def of_step(
    scope: ReadScope,
    reading: VerifyReading,
    before: Observation | None,
    attempt: int,
    *,
    signed_as: str | None = None,
) -> VerifyReading:
    """The reading if it is of its plan step (and its before-state); else not observed.

    ``signed_as`` names the phase a reading must carry a trusted verifier's signature for
    before it may decide anything: a pre-read sets the before-state every later judgement
    compares with, and a reconciling read decides whether the act runs again. The final
    read-back is held to its signature by the grade instead; every check here reads the
    observation the verifier signed, never a copy beside it."""
    if reading.observation.outcome == Outcome.PROBE_ERROR:
        why = _not_observed_problem(reading)
    else:
        why = _signature_problem(scope, reading, attempt, signed_as) or _step_problem(
            scope, reading, before
        )
    return reading if why is None else unobserved(scope, reading.index, why)


def _not_observed_problem(reading: VerifyReading) -> str | None:
    """Nothing was observed: it cannot count either way, as long as its proof says so too. A
    relay could set a probe-error observation beside a signed pass of something easier, and the
    proof, not the observation, goes into the receipt."""
    obs = reading.observation
    signed = (reading.proof.landed or {}).get("observation")
    said = (reading.proof.result or "").strip().lower()
    if said == Outcome.PROBE_ERROR.value and (
        signed is None or signed == obs.model_dump(mode="json")
    ):
        return None
    return (
        f"the reading of plan step #{reading.index + 1} says nothing was observed, but its "
        f"proof says {said or 'nothing'}"
    )


def _signature_problem(
    scope: ReadScope, reading: VerifyReading, attempt: int, signed_as: str | None
) -> str | None:
    """Why the reading's observation is not what a trusted verifier signed, or None."""
    step = f"plan step #{reading.index + 1}"
    signed = (reading.proof.landed or {}).get("observation")
    # The copy checked after this must be what the signature covers, or a relay could show this
    # step's probe and expectation beside a proof of something easier.
    unlike_signed = signed != reading.observation.model_dump(mode="json")
    if signed_as is None:
        if signed is not None and unlike_signed:
            return f"the reading of {step} differs from the observation the verifier signed"
        return None
    problem = check_reading(
        reading.proof,
        scope.trusted,
        task_id=scope.spec.task_id,
        attempt=attempt,
        phase=signed_as,
        run_id=scope.run_id,
    )
    if problem is None and unlike_signed:
        problem = "the reading differs from the observation the verifier signed"
    if problem is None:
        return None
    return f"the {signed_as} reading of {step} is not a trusted verifier's: {problem}"


def _step_problem(
    scope: ReadScope, reading: VerifyReading, before: Observation | None
) -> str | None:
    """Why the reading is not of its step's probe, expectation and before-state, or None."""
    obs = reading.observation
    contract = scope.spec.proof_plan[reading.index]
    step = f"plan step #{reading.index + 1}"
    if obs.probe_sha256 != probe_digest(contract.probe) or obs.kind != contract.probe.kind:
        return f"the reading is not of {step}'s probe (another probe was run)"
    if obs.expectation != label_for(contract.probe, contract.expect):
        return f"the reading was judged under {obs.expectation!r}, not {step}'s expectation"
    meaning = scope.spec.meaning
    if meaning != LEGACY_MEANING and obs.outcome == Outcome.PASS:
        # A count or at_least of this plan judges the value read: a pass its value does not
        # make (a verifier that judged the change instead) is no reading of this step.
        alone = value_outcome(contract.expect, obs.value)
        if alone is not None and alone != Outcome.PASS:
            return (
                f"the reading of {step} passed with the value {obs.value}, which "
                f"{obs.expectation} judges {alone}: the verifier judged another meaning of it "
                "(upgrade verifiers before runners)"
            )
    if before is None:
        return None
    if obs.before_value != before.value:
        return f"the reading was not judged against {step}'s before-state from the pre-read"
    # The signature covers the before value but not the before outcome the verifier was handed;
    # judging again against this task's own pre-read shows a swapped outcome (a state that
    # already held passed off as changed).
    held = judge_with_before(
        contract.expect, Judgement(obs.outcome, "", obs.value), before, meaning=meaning
    )
    if held.outcome == obs.outcome:
        return None
    return (
        f"the reading of {step} ({obs.outcome}) does not follow from its before-state from the "
        f"pre-read, which makes it {held.outcome}: the verifier was handed another before-state"
    )


def nothing_landed(reading: VerifyReading, before: Observation | None) -> bool:
    """The reading shows the system of record as the act found it: worth another attempt.

    With a pre-read, the value and the raw evidence must both be the pre-read's, and one of
    them must be there to compare; without one, only a probe that found nothing at all."""
    obs = reading.observation
    if obs.outcome in (Outcome.PASS, Outcome.PROBE_ERROR):
        return False
    if before is None or before.outcome == Outcome.PROBE_ERROR:
        return obs.outcome == Outcome.EMPTY
    if obs.value is None and obs.evidence is None:
        return False  # nothing to compare: whether anything changed is unknown
    same_value = type(obs.value) is type(before.value) and obs.value == before.value
    now, then = obs.evidence, before.evidence
    same_evidence = (now is None and then is None) or (
        now is not None and then is not None and now.sha256 == then.sha256
    )
    return same_value and same_evidence


def answers_request(reading: VerifyReading, request: str) -> str | None:
    """None when a signed reading answers the read ``request`` (or is unsigned: the grade holds
    it to its signature); else why it answers nothing."""
    ext = reading.proof.landed or {}
    if "signature" not in ext or ext.get("request") == request:
        return None
    if not ext.get("request"):
        return (
            "the verifier signed no request id (it is older than the runner: upgrade verifiers "
            "before runners)"
        )
    return "the reading answers another read than the one asked for"


def still_to_read(todo: Sequence[int], got: dict[int, VerifyReading]) -> list[int]:
    """The steps to read again: unanswered ones, and probe-errors the verifier did not refuse.

    A refusal (the verifier's configuration does not allow the probe) stays what it is however
    often it is asked."""
    return [
        i
        for i in todo
        if i not in got
        or (got[i].observation.outcome == Outcome.PROBE_ERROR and not got[i].refused)
    ]
