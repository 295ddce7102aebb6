"""``landed demo``'s claim-stream scenario: an agent that acts outside Temporal logs its claims
to a JSONL file, and ``landed reconcile`` reads each one back by the operator's contract for its
outcome class (a lying one among them, and one that brings its own probe)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any, Final

from rich.console import Console
from rich.markup import escape
from rich.table import Table
from temporalio.client import Client as TemporalClient

from landed.receipts.plain import DONE_VERDICTS

__all__ = ["CLAIMS", "CONTRACTS", "claim_stream", "print_claims", "write_contracts"]

#: (line, story, the verdict it must get: "invalid" for a line reported and skipped).
CLAIMS: Final = (
    (1, "orders.created: 45 lines inserted outside Temporal, and there", "verified"),
    (2, "log line: 'Inserted 45 rows. Done.', nothing landed (a lie)", "planned"),
    (3, "log line: 'done', no outcome class (its word only)", "planned"),
    (4, "a line that names no task", "invalid"),
    (5, "the first claim sent again (replayed stream)", "verified"),
    (6, "its own probe (a count of orders already there) and a commit: at most P2", "built"),
)

#: The operator's claim contracts: how an orders.created claim is read back. The claimant
#: names the batch and the count; the query and the expectation are the operator's.
CONTRACTS: Final = {
    "contracts": {
        "orders.created": {
            "params": {"batch": "string", "count": "integer"},
            "outcome": "{count} order lines of batch {batch} are in the orders table",
            "proof_plan": [
                {
                    "action": "insert the order lines",
                    "probe": {
                        "kind": "record",
                        "source": "shop-db",
                        "query": "select count(*) from orders where batch = ?",
                        "params": [{"param": "batch"}],
                    },
                    "expect": {"type": "count", "value": {"param": "count"}},
                }
            ],
        }
    }
}


def write_contracts(home: Path) -> Path:
    """The contracts file the demo's runner holds (LANDED_RUNNER_CLAIM_CONTRACTS)."""
    path = home / "claim-contracts.json"
    path.write_text(json.dumps(CONTRACTS, indent=2) + "\n")
    return path


def _stream(run: str) -> list[str]:
    def orders(batch: str) -> dict[str, Any]:
        return {"outcome": "orders.created", "params": {"batch": batch, "count": 45}}

    real = {
        "kind": "contract",
        "task_id": f"claim-real-{run}",
        "owner": "outside-agent",
        **orders(f"x-{run}"),
    }
    lie = {
        "task_id": f"claim-lie-{run}",
        "owner": "outside-agent",
        "claimed_status": "done",
        "report": "Inserted 45 rows. Done.",
        **orders(f"y-{run}"),
    }
    word = {"task_id": f"claim-word-{run}", "status": "done", "report": "all good"}
    # A probe the claimant chose: every order counts, so it passes whatever was done.
    own = {
        "kind": "contract",
        "task_id": f"claim-own-{run}",
        "owner": "outside-agent",
        "outcome": f"45 order lines of batch z-{run} are in the orders table",
        "proof": [{"kind": "commit", "ref": "3f2c1a9", "result": "pass"}],
        "proof_plan": [
            {
                "action": "insert 45 order lines",
                "probe": {
                    "kind": "record",
                    "source": "shop-db",
                    "query": "select count(*) from orders",
                },
                "expect": {"type": "at_least", "value": 1},
            }
        ],
    }
    return [json.dumps(c) for c in (real, lie, word, {"status": "done"}, real, own)]


async def claim_stream(
    temporal: TemporalClient, home: Path, shop: Path, run: str
) -> list[dict[str, Any]]:
    """Write the stream, act "outside" for the real claim, reconcile it (--contracts, the
    runner's file); one row per line."""
    from landed.cli.reconcile_run import reconcile
    from landed.cli.reconcile_tail import Tail
    from landed.task.claim_contracts_lint import load_claim_contracts
    from landed.temporal.settings import DEFAULT_RUNNER_QUEUE

    with sqlite3.connect(shop, timeout=30) as conn:  # the agent's own write, no landed act
        conn.executemany(
            "insert into orders (batch, line, idempotency_key) values (?, ?, 'outside')",
            [(f"x-{run}", i) for i in range(45)],
        )
    path = home / f"claims-{run}.jsonl"
    path.write_text("\n".join(_stream(run)) + "\n")
    events: list[dict[str, Any]] = []
    # Concurrency 1: the replayed line comes after the first has settled, so it attaches.
    await reconcile(
        temporal,
        Tail(path, max_line=64 << 10),
        task_queue=DEFAULT_RUNNER_QUEUE,
        concurrency=1,
        emit=events.append,
        contracts=load_claim_contracts(home / "claim-contracts.json"),
    )
    by_line = {e["line"]: e for e in events if "line" in e}
    rows = []
    for line, story, expected in CLAIMS:
        event = by_line.get(line, {})
        verdict = event.get("verdict") or ("invalid" if event.get("event") == "invalid" else None)
        receipt = event.get("receipt") or {}
        ok = verdict == expected and (line != 5 or event.get("existing") is True)
        rows.append(
            {
                "line": line,
                "story": story,
                "claimed": receipt.get("claimed_status", "-"),
                "verdict": verdict,
                "proof_level": (receipt.get("landed") or {}).get("proof_level"),
                "expected": expected,
                "existing": event.get("existing", False),
                "message": event.get("message"),
                "ok": ok,
            }
        )
    return rows


def print_claims(console: Console, rows: list[dict[str, Any]]) -> None:
    table = Table(title="landed reconcile: a JSONL stream of claims from an agent outside Temporal")
    for column in ("line", "claim", "claimed", "verdict", "expected", ""):
        table.add_column(column)
    for r in rows:
        mark = "[green]ok[/]" if r["ok"] else "[bold red]WRONG[/]"
        verdict = f"{r['verdict']} ({r['proof_level']})" if r["proof_level"] else r["verdict"]
        if r["verdict"] != "invalid":  # a claim that settled: DONE or NOT DONE first
            done = r["verdict"] in DONE_VERDICTS
            verdict = ("[green]DONE[/] " if done else "[yellow]NOT DONE[/] ") + verdict
        if r["existing"]:
            verdict += " [dim]already reconciled: not read again[/]"
        story = escape(r["story"]) + (f"\n[dim]{escape(r['message'])}[/]" if r["message"] else "")
        table.add_row(str(r["line"]), story, r["claimed"], verdict, r["expected"], mark)
    console.print(table)
    good = sum(1 for r in rows if r["ok"])
    console.print(
        f"{good}/{len(rows)} claims as expected "
        "(landed reconcile --contracts CONTRACTS FILE; --follow)"
    )
