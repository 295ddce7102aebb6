"""Proof levels, the status ladder and the outbound ladders of the Definition of Done."""

from __future__ import annotations

import re
import unicodedata
from enum import IntEnum, StrEnum

__all__ = [
    "ARTIFACT_KINDS",
    "CALL_LADDER",
    "DONE_WORDS",
    "MESSAGE_LADDER",
    "NEGATIONS",
    "READ_BACK_KINDS",
    "CallRung",
    "MessageRung",
    "ProofLevel",
    "Status",
    "claim_words",
    "fold_text",
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

#: Claim words that mean "this is done". The spec's three (done, verified, reconciled) plus the
#: words statuses and loose logs use for the same claim: a word missing here would let a done claim
#: skip its bar. Ladder rungs below verified (deployed, scheduled, executed, sent, delivered) are
#: honest lower claims, not done claims, and stay out. Each needs P3; ``reconciled`` needs P4.
DONE_WORDS = frozenset(
    {
        *("done", "verified", "reconciled", "complete", "completed", "finished", "success"),
        *("succeeded", "successful", "successfully", "shipped", "ok", "okay", "resolved"),
        *("merged", "passed", "closed", "fixed", "published", "landed"),
    }
)

#: Words that cancel a done claim when they sit directly before the done word ("not done",
#: "isn't done", "never finished"), apostrophes removed.
NEGATIONS = frozenset(
    {
        *("not", "no", "never", "nor", "cannot", "isnt", "arent", "wasnt", "werent", "aint"),
        *("dont", "doesnt", "didnt", "hasnt", "havent", "hadnt", "cant", "couldnt", "wont"),
        *("wouldnt", "shouldnt"),
    }
)
# One of these may stand between the negation and the done word ("not yet done", "isn't fully
# done"); anything else (a comma, another word) makes the done word a claim of its own.
_SOFTENERS = frozenset({"yet", "quite", "fully", "entirely", "completely", "really", "all"})
# Check marks are done claims too ("✅", "✔"); NFKC leaves them as they are.
_CHECK_MARKS = ("\u2705", "\u2714", "\u2713", "\u2611", "\U0001f5f8")
_APOSTROPHES = str.maketrans("", "", "'\u2019\u2018\u02bc`\u00b4")
# Words (letters and digits), and punctuation as a token of its own that breaks adjacency;
# "-", "_" and "/" join like spaces ("not-done", "not_done").
_CLAIM_TOKEN = re.compile(r"[a-z0-9]+|[^\sa-z0-9_/-]")


def fold_text(text: str) -> str:
    """Text as the word rules compare it: NFKC, casefolded, accents stripped (fullwidth
    "DONE" and "doné" read "done"), check marks read as "done"."""
    if text.isascii():
        return text.lower()
    folded = unicodedata.normalize("NFKC", text).casefold()
    for mark in _CHECK_MARKS:
        folded = folded.replace(mark, " done ")
    return "".join(c for c in unicodedata.normalize("NFKD", folded) if not unicodedata.combining(c))


def claim_words(claimed: str | None) -> list[str]:
    """The tokens of a claim, folded: words, and each punctuation mark as its own token."""
    if not claimed:
        return []
    return _CLAIM_TOKEN.findall(fold_text(claimed).translate(_APOSTROPHES))


def _negated(tokens: list[str], index: int) -> bool:
    before = index - 1
    if before >= 0 and tokens[before] in _SOFTENERS:
        before -= 1
    return before >= 0 and tokens[before] in NEGATIONS


READ_BACK_KINDS = frozenset(
    {"http_contains", "provider_object", "sent_log", "call_log", "payment", "deployment", "record"}
)
ARTIFACT_KINDS = frozenset({"commit", "pull_request", "file", "test_run", "screenshot", "log"})


def required_level(claimed: str | None) -> ProofLevel | None:
    """The proof level a status or verdict needs to be honest: P4 when it says reconciled, P3
    for any other done word, None when it claims nothing done ("executed", "not done").

    This is the one claim logic: the grader calls it. A negation cancels only the done word it
    sits directly before, so "done, no errors" and "no problems, done" are done claims; a status
    with any un-negated done word claims done (fail closed)."""
    tokens = claim_words(claimed)
    best: ProofLevel | None = None
    for index, word in enumerate(tokens):
        if word in DONE_WORDS and not _negated(tokens, index):
            if word == "reconciled":
                return ProofLevel.P4
            best = ProofLevel.P3
    return best


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
