"""``landed demo``'s pause scenario (GOV-4): a paused fleet acts on nothing; resumed, all settle.

Run after the six scenarios, on the same ``landed dev`` stack: the fleet is paused, three tasks
are submitted and wait at the switch (their order lines stay absent), then the fleet is resumed
and all three act, are read back and settle verified.
"""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path
from typing import Any

from landed.temporal.client import Client
from landed.temporal.fleet import flip

__all__ = ["PAUSED_FOR_S", "pause_row"]

#: How long the demo watches the paused fleet for an act (longer than GOV-4's 5 seconds).
PAUSED_FOR_S = 6.0


def _task(run: str, i: int) -> dict[str, Any]:
    batch = f"p{i}-{run}"
    return {
        "task_id": f"demo-paused-{i}-{run}",
        "owner": "demo-agent",
        "outcome": f"45 order lines of batch {batch} are in the orders table",
        "target": "shop-db: orders",
        "act": {"name": "demo.insert_orders", "input": {"batch": batch, "claim": 45, "land": 45}},
        "proof_plan": [
            {
                "action": "insert 45 order lines",
                "probe": {
                    "kind": "record",
                    "source": "shop-db",
                    "query": "select count(*) from orders where batch = ?",
                    "params": [batch],
                },
                "expect": {"type": "count", "value": 45},
            }
        ],
    }


def _lines(shop: Path, run: str) -> int:
    with sqlite3.connect(shop, timeout=30) as conn:
        row = conn.execute("select count(*) from orders where batch like ?", [f"p%-{run}"])
        return int(row.fetchone()[0])


async def _stored(ledger_url: str, task_ids: list[str]) -> bool:
    """Every task's receipt is in the ledger, verified (the demo holds itself to the rule)."""
    from landed.ledger.factory import open_ledger

    ledger = await open_ledger(ledger_url, create=False)
    try:
        found = [await ledger.latest(t) for t in task_ids]
    finally:
        await ledger.close()
    return all(r is not None and r.verdict == "verified" for r in found)


async def pause_row(client: Client, shop: Path, run: str, ledger_url: str) -> dict[str, Any]:
    """Pause, submit three tasks, watch nothing act, resume, and settle them: the demo's row."""
    queue = client.task_queue
    paused = await flip(
        client.temporal, paused=True, by="demo-operator", reason="demo", runner_queue=queue
    )
    handles = [await client.start(_task(run, i)) for i in range(3)]
    await asyncio.sleep(PAUSED_FOR_S)
    acted_while_paused = _lines(shop, run)
    resumed = await flip(client.temporal, paused=False, by="demo-operator", runner_queue=queue)
    receipts = [await h.result() for h in handles]
    verdicts = sorted({r.verdict or "none" for r in receipts})
    in_ledger = await _stored(ledger_url, [r.task_id for r in receipts])
    ok = (
        paused.confirmed
        and resumed.confirmed
        and acted_while_paused == 0
        and verdicts == ["verified"]
        and in_ledger
    )
    return {
        "scenario": "paused-fleet",
        "story": f"fleet paused: 3 tasks wait {PAUSED_FOR_S:.0f} s, no line written; "
        "resumed: all act and settle",
        "task_id": ", ".join(r.task_id for r in receipts),
        "claimed": ", ".join(sorted({r.claimed_status for r in receipts})),
        "read_back": "pass" if acted_while_paused == 0 else f"{acted_while_paused} lines early",
        "verdict": ", ".join(verdicts),
        "done": all(r.done for r in receipts),
        "proof_level": ", ".join(
            sorted({str(getattr(r.landed, "proof_level", None) or "-") for r in receipts})
        ),
        "expected": "verified",
        "in_ledger": in_ledger,
        "ok": ok,
        "findings": [] if ok else [f"order lines written while paused: {acted_while_paused}"],
    }
