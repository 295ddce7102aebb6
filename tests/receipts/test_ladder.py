"""The ladder, proof levels and the claim words' bars, as the DoD v1.0 defines them."""

from __future__ import annotations

import pytest

from landed import CallRung, MessageRung, ProofLevel, Status, required_level


def test_ladder_order_and_side_states() -> None:
    order = ["planned", "built", "deployed", "scheduled", "executed", "verified", "reconciled"]
    assert [Status(w).rank for w in order] == list(range(7))
    for side in ("blocked", "held", "failed", "superseded"):
        assert Status(side).is_side_state
        assert Status(side).rank == -1
    assert [s.value for s in Status if s.is_done] == ["verified", "reconciled"]


@pytest.mark.parametrize(
    ("word", "level"),
    [("done", ProofLevel.P3), ("Verified", ProofLevel.P3), ("reconciled", ProofLevel.P4)],
)
def test_done_words_need_read_back(word: str, level: ProofLevel) -> None:
    assert required_level(word) == level


@pytest.mark.parametrize("word", ["executed", "held", "blocked", "scheduled", "sent"])
def test_other_words_claim_nothing_done(word: str) -> None:
    assert required_level(word) is None


def test_outbound_ladders() -> None:
    assert MessageRung.QUEUED < MessageRung.ACCEPTED < MessageRung.SENT < MessageRung.DELIVERED
    assert CallRung.RINGING < CallRung.ANSWERED < CallRung.COMPLETED
