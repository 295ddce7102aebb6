"""What a receipt claims: its status word and a verdict written into it, each may say done."""

from __future__ import annotations

from functools import lru_cache
from typing import NamedTuple

from landed.receipts.findings import self_verdict
from landed.receipts.ladder import ProofLevel, Status, required_level
from landed.receipts.words import clip, first_not_done

__all__ = ["ACTOR_NAMES", "Claim", "StatusFacts", "claim_bar", "status_facts", "verdict_claims"]

ACTOR_NAMES = frozenset({"actor", "agent", "self", "owner"})
_SIDE_STATES = {s.value: s for s in Status if s.is_side_state}
_LADDER_RUNGS = {s.value: s for s in Status if not s.is_side_state}


@lru_cache(maxsize=512)
def claim_bar(word: str | None) -> ProofLevel | None:
    """The level a status or verdict word needs: P4 for reconciled, P3 for any other done word,
    None when it claims nothing done ("executed", "held", "not done"). It is
    ``landed.required_level``, memoised: there is one claim logic."""
    return required_level(word)


class Claim(NamedTuple):
    """What the status and a verdict written into the receipt claim."""

    bar: int  # the highest level either needs; -1: neither claims done
    source: str  # which one sets the bar: "claimed_status" or "verdict"
    word: str
    # An independent verifier's verdict that the task is not done: done is its word (DOD-2).
    overruled: str | None
    side: Status | None  # a side state the verifier's verdict names
    rung: Status | None  # a rung the verifier held the task to (caps the honest status)


class StatusFacts(NamedTuple):
    bar: int  # -1: claims nothing done
    side: Status | None  # the side state the word names (blocked, held, failed, superseded)
    rung: Status | None  # the ladder rung the word names
    not_done: str | None  # a DOD-7 phrase in the status itself ("done (partial)")
    # The claim of a receipt with this status and no verdict: the common case, made once.
    claim: Claim


@lru_cache(maxsize=1024)
def status_facts(word: str) -> StatusFacts:
    # Status words come from a small vocabulary, so everything derived from one is computed once.
    level = claim_bar(word)
    bar = -1 if level is None else int(level)
    norm = word.strip().lower()
    return StatusFacts(
        bar,
        _SIDE_STATES.get(norm),
        _LADDER_RUNGS.get(norm),
        first_not_done(word),
        Claim(bar, "claimed_status", word, None, None, None),
    )


@lru_cache(maxsize=4096)
def verdict_claims(
    claimed: str, verdict: str, verdict_by: str | None, owner: str
) -> tuple[Claim, tuple[tuple[str, str], ...]]:
    """The claims of a receipt with a verdict (``owner`` normalised: stripped, lowercase): the
    status and the verdict each may say done; and the DOD-2 findings about who issued it.

    Memoised: statuses, verdicts and their issuers come from small vocabularies (runners and
    owners), and a memo hit costs less than reading them again on files of millions."""
    status = status_facts(claimed)
    bar, source, word = status.bar, "claimed_status", claimed
    findings: list[tuple[str, str]] = []
    overruled: str | None = None
    side: Status | None = None
    rung: Status | None = None
    by = verdict_by.strip().lower() if verdict_by else ""
    facts = status if verdict == claimed else status_facts(verdict)
    if not by:
        why = "names no verdict_by; a verdict nobody can be shown to have issued is void"
        findings.append(("DOD-2", f"verdict '{clip(verdict)}' {why}"))
    elif by in ACTOR_NAMES or by == owner:
        findings.append(("DOD-2", self_verdict(verdict, verdict_by, by == owner)))
    else:
        # held, blocked, failed, superseded as the verifier's word: the task's state; and a
        # rung (planned, executed) the verifier held it to caps the honest status.
        side, rung = facts.side, facts.rung
    if facts.bar < 0 <= bar:
        # Void as a grade (it can raise nothing), a verdict of "not done" still stands:
        # whoever issued it, nothing is proven done against it.
        overruled = (
            f"the verdict '{clip(verdict)}' by '{clip(verdict_by or '')}' says "
            "the task is not done; done is a verdict, not the agent's claim"
        )
    if facts.bar > bar:
        bar, source, word = facts.bar, "verdict", verdict
    return Claim(bar, source, word, overruled, side, rung), tuple(findings)
