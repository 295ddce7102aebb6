"""What a step's Temporal error says: its cause, its type, and the run or actor it names."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from temporalio.exceptions import ActivityError, ApplicationError, TimeoutType
from temporalio.exceptions import TimeoutError as TemporalTimeout

__all__ = ["LOCAL_GAVE_UP", "beat_identity", "cause", "is_type", "no_verifier_answered"]
__all__ += ["refused_for"]

#: What a local activity that gave up raises in the workflow: its own error, not always an
#: ActivityError (sdk-python 1.35). Catch all three where the workflow carries on without it.
LOCAL_GAVE_UP = (ActivityError, ApplicationError, TemporalTimeout)


def cause(err: BaseException) -> str:
    """The error an activity ended with (the one an ActivityError wraps), as type and text."""
    inner = err.cause if isinstance(err, ActivityError) and err.cause is not None else err
    return f"{type(inner).__name__}: {inner}"


def is_type(err: BaseException, error_type: str) -> bool:
    """The error, or the one an ActivityError wraps, is an ApplicationError of that type."""
    inner = err.cause if isinstance(err, ActivityError) else err
    return isinstance(inner, ApplicationError) and inner.type == error_type


def refused_for(err: ActivityError) -> str | None:
    """The run whose claim the actor saw on the act it refused (actors before it said so: None).

    It is the claim this run sent, unless something between the workflow and the actor changed
    the act's input; the actor's word is what it refused, so that is the run named.
    """
    inner = err.cause
    return _first_text(inner.details if isinstance(inner, ApplicationError) else ())


def beat_identity(cause: BaseException | None) -> str | None:
    """The actor named in the last heartbeat of an act attempt that timed out, if it beat."""
    return _first_text(cause.last_heartbeat_details if isinstance(cause, TemporalTimeout) else ())


def no_verifier_answered(err: ActivityError) -> bool:
    """The read timed out before any verifier took it (or before its deadline)."""
    return isinstance(err.cause, TemporalTimeout) and err.cause.type in (
        TimeoutType.SCHEDULE_TO_START,
        TimeoutType.SCHEDULE_TO_CLOSE,
    )


def _first_text(details: Sequence[Any]) -> str | None:
    """The first of an error's details when it is a non-empty string (a run or actor name)."""
    first = details[0] if details else None
    return first if isinstance(first, str) and first else None
