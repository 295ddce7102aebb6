"""A settled receipt of one read-back ("add 3 orders", count(3)), for tests of how a verdict
reads in words."""

from __future__ import annotations

from datetime import UTC, datetime

import landed

__all__ = ["settled_receipt"]


def settled_receipt(task_id: str, verdict: str, result: str, value: int) -> landed.Receipt:
    """Settled with ``verdict``; its one read-back found ``value`` and judged it ``result``."""
    proof = {
        "kind": "record",
        "expect": "count(3)",
        "result": result,
        "landed": {"action": "add 3 orders", "observation": {"value": value}},
    }
    return landed.Receipt(
        task_id=task_id,
        claimed_status="done",
        verdict=verdict,
        settled_at=datetime(2026, 12, 4, tzinfo=UTC),
        proof=[landed.ProofItem.model_validate(proof)],
    )
