"""What every ledger backend must do with claims (see Ledger.claim) and concurrent writers;
shared by both test files."""

from __future__ import annotations

import asyncio

from landed.ledger.base import Ledger
from landed.receipts.model import Receipt


async def check_claims(ledger: Ledger, settled: Receipt) -> None:
    """``settled`` is a receipt of task ``settled.task_id`` not yet in ``ledger``."""
    assert await ledger.claim("t", "run-1", 1, "d1") == (None, None)
    assert await ledger.claim("t", "run-1", 1, "d1") == (None, None)  # the same run again
    # The same run's next attempt is its own business, not another run's claim.
    assert await ledger.claim("t", "run-1", 2, "d1") == (None, None)
    _, other = await ledger.claim("t", "run-2", 1, "d1")
    assert other is not None and (other.run_id, other.spec_sha256) == ("run-1", "d1")
    assert other.attempt == 1 and other.claimed_at.tzinfo is not None
    _, again = await ledger.claim("t", "run-3", 1, "d2")
    assert again is not None and again.run_id == "run-1"  # the first, whoever asks
    # A lookup (record=False) answers the same and writes nothing.
    assert await ledger.claim("looked-up", "run-a", 1, "d1", record=False) == (None, None)
    _, seen = await ledger.claim("looked-up", "run-b", 1, "d1")
    assert seen is None  # run-a's lookup left no claim behind
    _, looked = await ledger.claim("looked-up", "run-c", 1, "d1", record=False)
    assert looked is not None and looked.run_id == "run-b"
    _, first = await ledger.claim("looked-up", "run-d", 1, "d1")
    assert first is not None and first.run_id == "run-b"  # run-c's lookup claimed nothing
    task = settled.task_id
    assert await ledger.claim(task, "run-9", 1, "d9") == (None, None)  # per task id
    # A settled task claims nothing more: its receipt is the answer.
    await ledger.append(settled)
    stored, none = await ledger.claim(task, "run-10", 1, "d9")
    assert stored is not None and stored.task_id == task and none is None
    looked_up, none = await ledger.claim(task, "run-11", 1, "d9", record=False)
    assert looked_up is not None and looked_up.task_id == task and none is None


async def check_concurrent_claims(one: Ledger, other: Ledger) -> None:
    """Two runs claiming one task id at the same moment, through two connections: the later
    one always learns of the earlier (never both told that nobody else claimed it)."""
    for i in range(40):
        task = f"race-{i}"
        (_, seen_by_a), (_, seen_by_b) = await asyncio.gather(
            one.claim(task, "run-a", 1, "d"), other.claim(task, "run-b", 1, "d")
        )
        assert seen_by_a is not None or seen_by_b is not None, task
        assert {c.run_id for c in (seen_by_a, seen_by_b) if c is not None} <= {"run-a", "run-b"}


async def check_opposite_orders_do_not_deadlock(one: Ledger, other: Ledger) -> None:
    """Two writers appending the same keys in opposite orders both succeed."""

    def receipt(task_id: str) -> Receipt:
        return Receipt(task_id=task_id, claimed_status="done")

    for round_ in range(5):
        keys = [f"order-{round_}-{i}" for i in range(200)]
        forward, backward = await asyncio.gather(
            one.append_many(map(receipt, keys)), other.append_many(map(receipt, reversed(keys)))
        )
        assert sum(forward) + sum(backward) == len(keys)
