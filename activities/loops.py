"""The tripwire's side effects, on the runner: read the ledger to catch up, and tell a loop's
tripwire about each settled receipt."""

from __future__ import annotations

import asyncio

from temporalio import activity
from temporalio.client import Client
from temporalio.service import RPCError

from landed.ledger.base import Ledger, stage_of
from landed.receipts.model import Receipt, attempt_of
from landed.task.loops import tripwire_id
from landed.task.names import (
    CATCH_UP_ACTIVITY,
    SETTLED_SIGNAL,
    TRIPWIRE_WORKFLOW,
)
from landed.task.tripwire import CatchUp, Note, TripwireInput
from landed.telemetry.logs import task_event

__all__ = ["LoopActivities", "loop_of", "note_of", "signal_tripwire", "tell_tripwire"]


def loop_of(receipt: Receipt) -> str | None:
    return receipt.landed.loop if receipt.landed is not None else None


def note_of(receipt: Receipt) -> Note:
    return Note(
        task_id=receipt.task_id,
        attempt=attempt_of(receipt),
        verdict=receipt.verdict,
        settled_at=receipt.settled_at,
    )


async def signal_tripwire(client: Client, task_queue: str, receipt: Receipt) -> None:
    """Signal the receipt's loop's tripwire, starting it if it is not running (a loop of
    ad-hoc tasks gets default rules). A recheck's lifecycle row is not a settlement."""
    loop = loop_of(receipt)
    if loop is None or stage_of(receipt) != "settle":
        return
    await client.start_workflow(
        TRIPWIRE_WORKFLOW,
        TripwireInput(loop=loop),
        id=tripwire_id(loop),
        task_queue=task_queue,
        start_signal=SETTLED_SIGNAL,
        start_signal_args=[note_of(receipt)],
    )


_SENDING: set[asyncio.Task[None]] = set()


def tell_tripwire(client: Client, task_queue: str, receipt: Receipt) -> None:
    """signal_tripwire in the background (a few tries), so the settle step returns first."""
    if loop_of(receipt) is None:
        return

    async def send() -> None:
        for wait in (0.0, 0.5, 2.0, 5.0):
            await asyncio.sleep(wait)
            try:
                await signal_tripwire(client, task_queue, receipt)
                return
            except RPCError as exc:
                task_event(
                    "tripwire-signal-failed",
                    role="runner",
                    task_id=receipt.task_id,
                    error=str(exc)[:200],
                )

    task = asyncio.get_running_loop().create_task(send())
    _SENDING.add(task)
    task.add_done_callback(_SENDING.discard)


class LoopActivities:
    """Holds the runner's ledger, for the catch-up read."""

    def __init__(self, ledger: Ledger) -> None:
        self._ledger = ledger

    @activity.defn(name=CATCH_UP_ACTIVITY)
    async def catch_up(self, inp: CatchUp) -> list[Note]:
        """The loop's settled receipts in the ledger (newest ``limit``, oldest first)."""
        mine = [
            r
            for r in await self._ledger.board()
            if loop_of(r) == inp.loop
            and r.settled_at is not None
            and (inp.since is None or r.settled_at > inp.since)
        ]
        mine.sort(key=lambda r: (r.settled_at, r.task_id))
        return [note_of(r) for r in mine[-inp.limit :]]
