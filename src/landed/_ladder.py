"""Proof levels, the status ladder and the outbound ladders of the Definition of Done."""

from __future__ import annotations

from enum import IntEnum, StrEnum

__all__ = [
    "ARTIFACT_KINDS",
    "CALL_LADDER",
    "DONE_WORDS",
    "MESSAGE_LADDER",
    "READ_BACK_KINDS",
    "CallRung",
    "MessageRung",
    "ProofLevel",
    "Status",
    "required_level",
]


class ProofLevel(IntEnum):
    """How strongly a claim is proven: P0 (a status only) up to P4 (reconciled)."""

    P0 = 0
    P1 = 1
    P2 = 2
    P3 = 3
    P4 = 4

    @property
    def label(self) -> str:
        return f"P{int(self)}"


class Status(StrEnum):
    """A rung of the status ladder, or a side state that ends the attempt."""

    PLANNED = "planned"
    BUILT = "built"
    DEPLOYED = "deployed"
    SCHEDULED = "scheduled"
    EXECUTED = "executed"
    VERIFIED = "verified"
    RECONCILED = "reconciled"
    BLOCKED = "blocked"
    HELD = "held"
    FAILED = "failed"
    SUPERSEDED = "superseded"

    @property
    def is_side_state(self) -> bool:
        return self in _SIDE_STATES

    @property
    def rank(self) -> int:
        """Position on the ladder; side states have no rank (-1)."""
        return _LADDER.index(self) if self in _LADDER else -1

    @property
    def is_done(self) -> bool:
        return self in (Status.VERIFIED, Status.RECONCILED)


_LADDER = (
    Status.PLANNED,
    Status.BUILT,
    Status.DEPLOYED,
    Status.SCHEDULED,
    Status.EXECUTED,
    Status.VERIFIED,
    Status.RECONCILED,
)
_SIDE_STATES = frozenset({Status.BLOCKED, Status.HELD, Status.FAILED, Status.SUPERSEDED})

#: Claim words that mean "this is done"; each needs P3, and ``reconciled`` needs P4.
DONE_WORDS = frozenset({"done", "verified", "reconciled"})

READ_BACK_KINDS = frozenset(
    {"http_contains", "provider_object", "sent_log", "call_log", "payment", "deployment", "record"}
)
ARTIFACT_KINDS = frozenset({"commit", "pull_request", "file", "test_run", "screenshot", "log"})


def required_level(claimed: str) -> ProofLevel | None:
    """The proof level a claim word needs to be honest, or None when it claims nothing done."""
    word = claimed.strip().lower()
    if word == "reconciled":
        return ProofLevel.P4
    if word in DONE_WORDS:
        return ProofLevel.P3
    return None


class MessageRung(IntEnum):
    """Outbound text and email: queued < accepted < sent < delivered."""

    QUEUED = 0
    ACCEPTED = 1
    SENT = 2
    DELIVERED = 3


class CallRung(IntEnum):
    """Outbound calls: queued < accepted < ringing < answered < completed."""

    QUEUED = 0
    ACCEPTED = 1
    RINGING = 2
    ANSWERED = 3
    COMPLETED = 4


MESSAGE_LADDER: tuple[str, ...] = tuple(r.name.lower() for r in MessageRung)
CALL_LADDER: tuple[str, ...] = tuple(r.name.lower() for r in CallRung)
