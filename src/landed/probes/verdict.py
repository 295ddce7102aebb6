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
    "outcome_line",
    "report_lines",
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


def report_lines(verdict: Verdict) -> list[str]:
    """What one probe's verdict says, line by line, as ``landed verify`` prints it and the MCP
    ``verify`` tool answers it: what the probe returned (the evidence, as captured: capped,
    escaped, redacted), the expectation, the outcome, and who observed it."""
    obs = verdict.observation
    ev = obs.evidence
    if ev is None or ev.total_bytes == 0:
        lines = ["the probe returned nothing (0 bytes)"]
    else:
        cut = " (truncated)" if ev.truncated else ""
        lines = [f"the probe returned {ev.total_bytes} bytes, sha256 {ev.sha256}{cut}:"]
        lines.append(ev.text.removesuffix("\n"))
    lines.append(f"expectation: {verdict.expectation}")
    lines.append(f"outcome: {outcome_line(verdict)}")
    if verdict.note:
        lines.append(f"note: {verdict.note}")
    lines.append(f"observed by {obs.observer} in {obs.duration_ms:.1f} ms")
    return lines


def outcome_line(verdict: Verdict) -> str:
    """The outcome in words: what was observed, never more (a probe may not read the system
    of record at all)."""
    if verdict.outcome is Outcome.PROBE_ERROR:
        return f"probe-error (nothing was observed): {verdict.message}"
    if verdict.landed:
        return f"pass: the probe returned what {verdict.expectation} expects: {verdict.message}"
    said = f"the probe did not return what {verdict.expectation} expects"
    return f"{verdict.outcome.value}: {said}: {verdict.message}"


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
