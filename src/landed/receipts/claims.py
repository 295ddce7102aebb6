"""What a receipt claims: its status word and a verdict written into it, each may say done."""

from __future__ import annotations

from functools import lru_cache
from typing import NamedTuple

from landed.receipts.findings import self_verdict
from landed.receipts.ladder import ProofLevel, Status, required_level
from landed.receipts.views import ReceiptView
from landed.receipts.words import clip, first_not_done

__all__ = ["ACTOR_NAMES", "Claim", "StatusFacts", "claim_bar", "read_claims", "status_facts"]

ACTOR_NAMES = frozenset({"actor", "agent", "self", "owner"})
_SIDE_STATES = {s.value: s for s in Status if s.is_side_state}
_LADDER_RUNGS = {s.value: s for s in Status if not s.is_side_state}


@lru_cache(maxsize=512)
def claim_bar(word: str | None) -> ProofLevel | None:
    """The level a status or verdict word needs: P4 for reconciled, P3 for any other done word,
    None when it claims nothing done ("executed", "held", "not done"). It is
    ``landed.required_level``, memoised: there is one claim logic."""
    return required_level(word)


class StatusFacts(NamedTuple):
    bar: int  # -1: claims nothing done
    side: Status | None  # the side state the word names (blocked, held, failed, superseded)
    rung: Status | None  # the ladder rung the word names
    not_done: str | None  # a DOD-7 phrase in the status itself ("done (partial)")


@lru_cache(maxsize=1024)
def status_facts(word: str) -> StatusFacts:
    # Status words come from a small vocabulary, so everything derived from one is computed once.
    bar = claim_bar(word)
    norm = word.strip().lower()
    return StatusFacts(
        -1 if bar is None else int(bar),
        _SIDE_STATES.get(norm),
        _LADDER_RUNGS.get(norm),
        first_not_done(word),
    )


class Claim(NamedTuple):
    """What the status and a verdict written into the receipt claim."""

    bar: int  # the highest level either needs; -1: neither claims done
    source: str  # which one sets the bar: "claimed_status" or "verdict"
    word: str
    # An independent verifier's verdict that the task is not done: done is its word (DOD-2).
    overruled: str | None
    side: Status | None  # a side state the verifier's verdict names
    rung: Status | None  # a rung the verifier held the task to (caps the honest status)


def read_claims(
    view: ReceiptView, status: StatusFacts, owner: str, findings: list[tuple[str, str]]
) -> Claim:
    """The claims: the status, and a verdict written into the receipt, each may say done."""
    claimed = view.claimed_status
    verdict = view.verdict
    if not verdict:
        return Claim(status.bar, "claimed_status", claimed, None, None, None)
    bar, source, word = status.bar, "claimed_status", claimed
    overruled: str | None = None
    side: Status | None = None
    rung: Status | None = None
    by = view.verdict_by
    by = by.strip().lower() if by else ""
    facts = status if verdict == claimed else status_facts(verdict)
    if not by:
        why = "names no verdict_by; a verdict nobody can be shown to have issued is void"
        findings.append(("DOD-2", f"verdict '{clip(verdict)}' {why}"))
    elif by in ACTOR_NAMES or by == owner:
        findings.append(("DOD-2", self_verdict(verdict, view.verdict_by, by == owner)))
    else:
        # held, blocked, failed, superseded as the verifier's word: the task's state; and a
        # rung (planned, executed) the verifier held it to caps the honest status.
        side, rung = facts.side, facts.rung
    if facts.bar < 0 <= bar:
        # Void as a grade (it can raise nothing), a verdict of "not done" still stands:
        # whoever issued it, nothing is proven done against it.
        overruled = (
            f"the verdict '{clip(verdict)}' by '{clip(view.verdict_by or '')}' says "
            "the task is not done; done is a verdict, not the agent's claim"
        )
    if facts.bar > bar:
        bar, source, word = facts.bar, "verdict", verdict
    return Claim(bar, source, word, overruled, side, rung)
