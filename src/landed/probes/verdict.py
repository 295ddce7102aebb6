"""The verdict on one claim, and the exceptions ``gate()`` raises when a claim did not land."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from landed.probes.contract import Observation, Outcome

__all__ = [
    "WEAK_NOTE",
    "Duplicated",
    "Empty",
    "InvalidContract",
    "Mismatch",
    "NotLanded",
    "ProbeFailed",
    "Vacuous",
    "Verdict",
    "error_for",
]

WEAK_NOTE = (
    "non_empty is the weak default: any non-empty output would have passed; "
    "name what must be seen (count, contains, equals, ...) for a real check"
)


class Verdict(BaseModel):
    """Whether one claimed action landed, judged from one observation and nothing else."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    action: str
    landed: bool = Field(description="True only when the observation's outcome is pass.")
    outcome: Outcome
    expectation: str = Field(description="Label such as count(45) or non_empty (weak default).")
    weak: bool = Field(description="True when any non-empty output would have passed.")
    note: str = ""
    message: str = ""
    observation: Observation

    @classmethod
    def of(cls, action: str, observation: Observation) -> Verdict:
        return cls(
            action=action,
            landed=observation.outcome is Outcome.PASS,
            outcome=observation.outcome,
            expectation=observation.expectation,
            weak=observation.weak,
            note=WEAK_NOTE if observation.weak and observation.outcome is Outcome.PASS else "",
            message=observation.message,
            observation=observation,
        )


class NotLanded(Exception):
    """The claimed action was not shown to have landed. ``verdict`` says what was seen."""

    def __init__(self, message: str, verdict: Verdict | None = None) -> None:
        super().__init__(message)
        self.verdict = verdict


class ProbeFailed(NotLanded):
    """Nothing was observed (error, timeout, refused): the only failure worth retrying."""


class Mismatch(NotLanded):
    """The state was read and disagrees with the claim; re-reading will not change it."""


class Empty(Mismatch):
    """The read found nothing: no rows, no output, no such object."""


class Vacuous(Mismatch):
    """The expected state already held before the action, so this reading proves nothing."""


class Duplicated(Mismatch):
    """More landed than was claimed (a count above the claim, or a larger before/after delta)."""


class InvalidContract(NotLanded, ValueError):
    """The probe or expectation is not a valid declaration, so nothing could be checked."""


_ERRORS: dict[Outcome, type[NotLanded]] = {
    Outcome.PROBE_ERROR: ProbeFailed,
    Outcome.MISMATCH: Mismatch,
    Outcome.EMPTY: Empty,
    Outcome.VACUOUS: Vacuous,
    Outcome.DUPLICATED: Duplicated,
}


def error_for(verdict: Verdict) -> NotLanded:
    """The exception for a verdict that did not land."""
    cls = _ERRORS.get(verdict.outcome, NotLanded)
    return cls(
        f"{verdict.action!r} did not land: {verdict.outcome.value} under "
        f"{verdict.expectation}: {verdict.message}",
        verdict,
    )
