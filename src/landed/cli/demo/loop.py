"""The demo's loop scenario (GOV-9): a loop whose act stops landing trips its tripwire, exactly
one repair task runs and is verified, and the loop is healthy again. The loop's runs are
started directly with its name (its Schedule is created paused), so nothing waits minutes."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from landed.loops.spec import LoopSpec, loop_task
from landed.temporal.client import Client
from landed.temporal.loops import delete_loop, loop_state

__all__ = ["run_loop_scenario"]


def _orders(batch: str, land: int) -> dict[str, Any]:
    return {
        "owner": "demo-agent",
        "outcome": f"one order line of batch {batch} is in the orders table",
        "target": "shop-db: orders",
        "act": {"name": "demo.insert_orders", "input": {"batch": batch, "claim": 1, "land": land}},
        "proof_plan": [
            {
                "action": "insert one order line",
                "probe": {
                    "kind": "record",
                    "source": "shop-db",
                    "query": "select count(*) from orders where batch = ?",
                    "params": [batch],
                },
                "expect": {"type": "count", "value": 1},
            }
        ],
    }


async def _state(client: Client, name: str, phase: str, repairs: int) -> Any:
    deadline = time.monotonic() + 60
    while True:
        state = await loop_state(client.temporal, name)
        if state.phase == phase and state.repairs_verified >= repairs:
            return state
        if time.monotonic() > deadline:
            return state
        await asyncio.sleep(0.2)


async def run_loop_scenario(client: Client, run: str, ledger_url: str) -> dict[str, Any]:
    """Three runs claim done and land nothing; the tripwire trips, one repair is verified;
    a fourth run lands and the loop is healthy. The row the demo's table shows."""
    name = f"orders-feed-{run}"[:63].lower()
    repair = _orders(f"loop-repair-{run}", land=1)
    spec = LoopSpec.model_validate(
        {
            "name": name,
            "every": "PT15M",
            # Each run's batch is its own: the template names the loop's batch per run below.
            "task": _orders(f"loop-{run}", land=0),
            "repair": {
                "outcome": "the order feed lands again",
                "act": repair["act"],
                "proof_plan": repair["proof_plan"],
            },
        }
    )
    await client.create_loop(spec, paused=True)
    try:
        verdicts = []
        for i in range(3):
            verdicts.append((await client.run(loop_task(spec, f"{name}@{i}"))).verdict)
        tripped = await _state(client, name, "healthy", 1)
        fixed = spec.model_copy(update={"task": _orders(f"loop-{run}-ok", land=1)})
        after = (await client.run(loop_task(fixed, f"{name}@3"))).verdict
        state = await loop_state(client.temporal, name)
    finally:
        await delete_loop(client.temporal, name)
    trip = tripped.last_trip
    repairs = [t.repair_task_id for t in tripped.trips]
    stored = await _verified_in_ledger(ledger_url, repairs)
    ok = (
        verdicts == ["planned"] * 3
        and trip is not None
        and len(repairs) == 1
        and tripped.repairs_verified == 1
        and after == "verified"
        and state.phase == "healthy"
    )
    return {
        "scenario": "loop-tripwire",
        "story": "a loop's act stops landing: its tripwire queues one repair, verified",
        "task_id": repairs[0] if repairs else name,
        "claimed": "done",
        "read_back": f"{verdicts.count('planned')} not landed, then the repair",
        "verdict": f"{state.phase} after {len(repairs)} repair",
        "proof_level": trip.rule if trip else "no trip",
        "expected": "healthy after 1 repair",
        "in_ledger": stored,
        "ok": ok,
        "findings": [],
    }


async def _verified_in_ledger(url: str, task_ids: list[str | None]) -> bool:
    """Every repair's receipt is in the ledger, verified: the demo holds itself to the rule."""
    from landed.ledger.factory import open_ledger

    ledger = await open_ledger(url, create=False)
    try:
        found = [await ledger.latest(t) for t in task_ids if t]
        return bool(found) and all(r is not None and r.verdict == "verified" for r in found)
    finally:
        await ledger.close()
