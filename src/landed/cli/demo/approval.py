"""``landed demo``'s approval scenario (GOV-5, GOV-7): an invoice email that cannot be unsent
waits, held, until a named person approves it with their signed approver key (made for the
demo, its public half trusted by the demo's runner); then it is sent once and read back.

The act lives here and is imported by ``landed.cli.demo`` (the module the demo's actor loads),
so the actor registers it with the six scenarios' acts.
"""

from __future__ import annotations

import asyncio
import sqlite3
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from landed.task.acts import ActContext, act
from landed.task.messages import ActReport

if TYPE_CHECKING:
    from landed.receipts.model import Receipt
    from landed.temporal.client import Client

__all__ = [
    "APPROVER",
    "approval_row",
    "make_approver",
    "make_outbox",
    "send_invoice",
    "sent_count",
    "start_approval",
]

#: The person who approves in the demo: anyone but the agent that owns the task.
APPROVER: Final = "dana (finance)"
_STORY: Final = "invoice email held until a person approves"
# How long the demo waits to see the task held before it approves (bounded, never for ever).
_HELD_WITHIN_S: Final = 60.0


@act("demo.send_invoice", irreversible="send")
def send_invoice(spec: dict[str, Any], ctx: ActContext) -> ActReport:
    """Send the invoice email: a row in the shop's outbox. Registered irreversible: the actor
    runs it only for a task approved at its gate."""
    shop = ctx.credential("shop-db").removeprefix("sqlite:///")
    with sqlite3.connect(shop, timeout=30) as conn:
        conn.execute(
            "insert into outbox (invoice, recipient, idempotency_key) values (?, ?, ?)",
            [spec["invoice"], spec["recipient"], ctx.idempotency_key],
        )
    return ActReport(claimed_status="done", report=f"Emailed invoice {spec['invoice']}.")


def make_approver(home: Path) -> Path:
    """APPROVER's key (made once): the private key under ``home/approver-key``, its public half
    in ``home/approvers``, the directory ``landed dev``'s runner trusts. Returns the .key file."""
    from landed.signing import KeyPair
    from landed.temporal.approver_keys import approver_file_name

    own = home / "approver-key"
    existing = sorted(own.glob("approver-*.key")) if own.is_dir() else []
    if existing:
        return existing[0].resolve()
    key = KeyPair.generate()
    private, public = key.save(own, approver_file_name(APPROVER, key.key_id))
    trusted = home / "approvers"
    trusted.mkdir(parents=True, exist_ok=True, mode=0o700)
    (trusted / public.name).write_bytes(public.read_bytes())
    return private.resolve()


def make_outbox(shop: Path) -> None:
    """The outbox table the act writes and the verifier reads back."""
    with sqlite3.connect(shop) as conn:
        conn.execute(
            "create table if not exists outbox (invoice text, recipient text, idempotency_key text)"
        )


def _task(run: str) -> dict[str, Any]:
    invoice = f"INV-{run}"
    return {
        "task_id": f"demo-approval-{run}",
        "owner": "demo-agent",
        "outcome": f"invoice {invoice} was emailed once to the customer",
        "target": "shop-db: outbox",
        "irreversible": "send",
        "act": {
            "name": "demo.send_invoice",
            "input": {"invoice": invoice, "recipient": "customer@example.test"},
        },
        "proof_plan": [
            {
                "action": "email the invoice once",
                "probe": {
                    "kind": "record",
                    "source": "shop-db",
                    "query": "select count(*) from outbox where invoice = ?",
                    "params": [invoice],
                },
                "expect": {"type": "count", "value": 1},
            }
        ],
    }


async def start_approval(client: Client, run: str, key: Path) -> tuple[Receipt, bool]:
    """Submit the task, see it held, approve it as APPROVER signed with ``key``, and wait for
    its receipt; also whether it was seen held (with nothing sent) before the approval."""
    handle = await client.start(_task(run))
    deadline = time.monotonic() + _HELD_WITHIN_S
    held = False
    while not held and time.monotonic() < deadline:
        held = (await handle.progress()).rung == "held"
        if not held:
            await asyncio.sleep(0.1)
    if held:
        await handle.approve(APPROVER, note="amount checked against the order", key=key)
    return await handle.result(), held


def approval_row(receipt: Receipt, held: bool, in_ledger: bool, sent: int) -> dict[str, Any]:
    """The scenario's line in the demo's table: ok when it was held, approved by the named
    person, sent once and verified by its read-back."""
    backs = [p for p in receipt.proof if p.landed and "observation" in p.landed]
    read_back = backs[0].result if backs else "none"
    approved_by = receipt.approval.approved_by if receipt.approval else None
    landed = receipt.landed
    gate = getattr(landed, "approval", None) or {}
    signed = gate.get("signed") if isinstance(gate, dict) else None
    key_id = signed.get("key_id") if isinstance(signed, dict) else None
    ok = held and approved_by == APPROVER and key_id is not None and sent == 1 and in_ledger
    ok = ok and receipt.verdict == "verified" and read_back == "pass"
    return {
        "scenario": "approval",
        "story": f"{_STORY} (approved by {approved_by or 'nobody'})",
        "task_id": receipt.task_id,
        "claimed": receipt.claimed_status,
        "read_back": read_back,
        "verdict": receipt.verdict,
        "done": receipt.done,
        "proof_level": getattr(landed, "proof_level", None),
        "expected": "verified",
        "in_ledger": in_ledger,
        "ok": ok,
        "findings": list(getattr(landed, "findings", []) or []),
        "held_before_approval": held,
        "approved_by": approved_by,
        "approver_key_id": key_id,
        "emails_sent": sent,
    }


def sent_count(shop: Path, run: str) -> int:
    with sqlite3.connect(shop) as conn:
        (n,) = conn.execute(
            "select count(*) from outbox where invoice = ?", [f"INV-{run}"]
        ).fetchone()
    return int(n)
