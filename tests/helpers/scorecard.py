"""Receipts as the runner settles them, for the exporter's tests and benchmark."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime, timedelta

from landed.probes.contract import Evidence, Observation, Outcome
from landed.receipts.model import Cost, LandedExtension, ProofItem, Receipt
from landed.signing import KeyPair, sign_proof

__all__ = ["KEY", "settled"]

KEY = KeyPair.generate()
AT = datetime(2026, 11, 7, 1, 0, 0, tzinfo=UTC)


def _reading(task_id: str, attempt: int, outcome: Outcome, ms: float) -> ProofItem:
    obs = Observation(
        outcome=outcome,
        expectation="count(45)",
        kind="record",
        source="orders-db",
        observer="verifier-1",
        observed_at=AT,
        duration_ms=ms,
        evidence=Evidence(text="45", total_bytes=2, sha256=hashlib.sha256(b"45").hexdigest()),
        value=45,
    )
    proof = ProofItem(
        kind="record",
        ref="orders-db:select count(*) from orders",
        expect="count(45)",
        checked_by="verifier-1",
        checked_at=AT,
        result=str(outcome),
    )
    return sign_proof(KEY, task_id=task_id, attempt=attempt, proof=proof, observation=obs)


def settled(
    task_id: str,
    *,
    owner: str = "agent-a",
    loop: str | None = None,
    verdict: str = "verified",
    claimed: str = "done",
    usd: float | None = 0.5,
    revenue: float | None = None,
    attempt: int = 1,
    ms: float = 20.0,
) -> Receipt:
    """A receipt with one signed read-back: verified (P3) passes it, anything else does not."""
    outcome = Outcome.PASS if verdict in ("verified", "reconciled") else Outcome.MISMATCH
    return Receipt(
        task_id=task_id,
        owner=owner,
        outcome="rows inserted",
        target="orders-db",
        claimed_status=claimed,
        report="inserted 45 rows",
        proof=[_reading(task_id, attempt, outcome, ms)],
        cost=Cost(usd=usd) if usd is not None else None,
        verdict=verdict,
        verdict_by="landed-verifier",
        settled_at=AT + timedelta(seconds=attempt),
        landed=LandedExtension(attempt=attempt, rung=verdict, loop=loop, revenue_usd=revenue),
    )
