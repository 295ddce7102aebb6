"""Frame checks: what the act must leave as it found it, judged from two signed readings.

A proof plan says what the act changed; nothing in it says what else the act changed. A task
that inserts its 45 rows and also deletes another batch reads back 45. A frame is a contract
(probe + expectation) over something the act must not touch: it must pass its expectation in
the pre-read, pass it again in the read-back, and read the same both times. The readings are
the verifier's, signed as ``frame-before`` and ``frame-after`` (never a read-back of the
outcome), and held to their frame like any plan step's (``landed.task.readings.of_step``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from landed.probes.contract import Observation, Outcome
from landed.receipts.verdict import FrameCheck
from landed.task.spec import TaskSpec

__all__ = ["frame_checks", "frame_problem", "frame_view", "pre_read_count", "recheck_frames"]

_SHOWN = 80


def frame_view(spec: TaskSpec) -> TaskSpec:
    """The task with its frames as its plan: what the workflow's reader reads for them (the
    reader and ``of_step`` read ``proof_plan``), so frames are read, re-read on probe-error and
    held to their step by the same code as plan steps. Used for reading only, never graded."""
    return spec.model_copy(update={"proof_plan": list(spec.frames)})


def pre_read_count(spec: TaskSpec) -> int:
    """How many reads the pre-read makes: each plan step and each frame."""
    return len(spec.proof_plan) + len(spec.frames)


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= _SHOWN else text[:_SHOWN] + "..."


def _same(before: Observation, after: Observation) -> bool:
    """The two readings read the same: the judged value and every byte the probe returned."""
    if type(before.value) is not type(after.value) or before.value != after.value:
        return False
    then, now = before.evidence, after.evidence
    if then is None or now is None:
        return then is None and now is None
    return then.sha256 == now.sha256


def frame_problem(
    before: Observation | None, after: Observation | None, *, when: str = "after the act"
) -> str | None:
    """Why a frame does not show the act left it alone (None: it held). Fail closed: a frame
    not read, or read as nothing observed, holds nothing. ``when`` says when ``after`` was
    read (a recheck reads it again long after the act)."""
    if before is None:
        return (
            "it was not read before the act (the runner read no before-state), so nothing "
            "shows it unchanged"
        )
    if after is None:
        return f"it was not read back {when}, so nothing shows it unchanged"
    for at, obs in (("before the act", before), (when, after)):
        if obs.outcome is Outcome.PROBE_ERROR:
            return f"its reading {at} observed nothing ({obs.message})"
    if before.outcome is not Outcome.PASS:
        return (
            f"it did not hold before the act ({before.outcome}: {before.message}); a frame must "
            "pass its expectation in the pre-read"
        )
    if after.outcome is not Outcome.PASS:
        return f"it changed: {when} it reads {after.outcome} ({after.message})"
    if not _same(before, after):
        return (
            f"it changed: it read {_show(before.value)} before the act and {_show(after.value)} "
            f"{when} (the probe's output differs)"
        )
    return None


def frame_checks(
    spec: TaskSpec,
    before: Sequence[Observation | None],
    after: Sequence[Observation | None],
) -> tuple[FrameCheck, ...]:
    """Each declared frame with why it did not hold (None: held). A reading missing from
    ``before`` or ``after`` is a frame not read."""
    return tuple(
        FrameCheck(
            frame.action,
            frame_problem(_at(before, i), _at(after, i)),
        )
        for i, frame in enumerate(spec.frames)
    )


def _at(readings: Sequence[Observation | None], i: int) -> Observation | None:
    return readings[i] if i < len(readings) else None


def recheck_frames(
    spec: TaskSpec,
    before: Sequence[Observation | None],
    again: Sequence[Observation | None],
    *,
    when: str,
) -> list[FrameCheck | None]:
    """Each frame as a recheck read it again ``when``, against its reading before the act:
    why it no longer holds (its problem), or None where the recheck cannot tell: the frame
    was not observed now, or the recheck holds no before-state for it (a recheck started
    before rechecks read frames). A frame that held at settle read the same before and after
    the act, so comparing with its before-state is comparing with what the task settled on."""
    checks: list[FrameCheck | None] = []
    for i, frame in enumerate(spec.frames):
        then, now = _at(before, i), _at(again, i)
        if then is None or now is None or now.outcome is Outcome.PROBE_ERROR:
            checks.append(None)
        else:
            checks.append(FrameCheck(frame.action, frame_problem(then, now, when=when)))
    return checks
