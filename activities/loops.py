"""The tripwire's side effects, on the runner: read the ledger (the catch-up at start, and the
loop's stream after the tripwire's cursor), and tell a loop's tripwire about each settled
receipt (the fast path: a lost signal is found by the tripwire's next read of its stream)."""

from __future__ import annotations

import asyncio
from datetime import datetime

from temporalio import activity
from temporalio.client import Client
from temporalio.exceptions import ApplicationError
from temporalio.service import RPCError

from landed.ledger.base import Ledger, LoopRow, stage_of
from landed.ledger.events import EventConflict, LedgerEvent
from landed.loops.spec import tripwire_id
from landed.loops.stream import READ_AFTER_ACTIVITY, StreamPage, StreamRead
from landed.loops.tripwire import CatchUp, Note, Trip, TripRecord, TripwireInput, trip_key
from landed.receipts.model import Receipt, attempt_of
from landed.task.names import (
    CATCH_UP_ACTIVITY,
    HELD_EVENT,
    LAST_TRIP_ACTIVITY,
    RECORD_TRIP_ACTIVITY,
    SETTLED_SIGNAL,
    TRIP_EVENT,
    TRIPWIRE_WORKFLOW,
)
from landed.telemetry.logs import task_event

__all__ = ["LoopActivities", "loop_of", "note_of", "signal_tripwire", "tell_tripwire"]
__all__ += ["trip_event"]


def loop_of(receipt: Receipt) -> str | None:
    return receipt.landed.loop if receipt.landed is not None else None


def note_of(receipt: Receipt) -> Note:
    return Note(
        task_id=receipt.task_id,
        attempt=attempt_of(receipt),
        verdict=receipt.verdict,
        settled_at=receipt.settled_at,
    )


async def signal_tripwire(client: Client, task_queue: str, loop: str, notes: list[Note]) -> None:
    """Signal the loop's tripwire with settled receipts, starting it if it is not running (a
    loop of ad-hoc tasks gets default rules)."""
    await client.start_workflow(
        TRIPWIRE_WORKFLOW,
        TripwireInput(loop=loop),
        id=tripwire_id(loop),
        task_queue=task_queue,
        start_signal=SETTLED_SIGNAL,
        start_signal_args=[notes],
    )


#: Settled receipts waiting to be signalled, per (task queue, loop); one signal carries all
#: that settled within _GATHER: a busy loop costs its tripwire one workflow task per batch.
_WAITING: dict[tuple[str, str], list[Note]] = {}
_SENDING: set[asyncio.Task[None]] = set()
_GATHER = 1.0


def tell_tripwire(client: Client, task_queue: str, receipt: Receipt) -> None:
    """Queue the receipt for its loop's tripwire (a recheck's lifecycle row is not a
    settlement); sent in the background, so the settle step returns first."""
    loop = loop_of(receipt)
    if loop is None or stage_of(receipt) != "settle":
        return
    key = (task_queue, loop)
    if key in _WAITING:
        _WAITING[key].append(note_of(receipt))
        return
    _WAITING[key] = [note_of(receipt)]

    async def send() -> None:
        await asyncio.sleep(_GATHER)
        notes = _WAITING.pop(key)
        for wait in (0.0, 0.5, 2.0, 5.0, 15.0):
            await asyncio.sleep(wait)
            try:
                await signal_tripwire(client, task_queue, loop, notes)
                return
            except RPCError as exc:
                # Not lost for good: the tripwire reads its loop's stream from the ledger
                # at least every landed.loops.stream.EVERY.
                task_event(
                    "tripwire-signal-failed",
                    role="runner",
                    task_id=notes[0].task_id,
                    attempt=notes[0].attempt,
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
        """The loop's settled receipts in the ledger (newest ``limit``, oldest first).

        One read through the ledger's loop index: its work is bounded by ``limit``, not by the
        ledger, so it ends within its local activity's limit however large the ledger grows. A
        row the chain no longer proves (or whose body was changed) is logged as untrusted and
        left out: it never reaches the tripwire as a settlement."""
        rows = await self._ledger.loop_latest(inp.loop, inp.since, inp.limit)
        notes = [n for n in (_settled(row, inp.loop) for row in rows) if n is not None]
        mine = [n for n in notes if _after(n.settled_at, inp.since)]
        mine.sort(key=lambda n: (n.settled_at, n.task_id))
        return mine

    @activity.defn(name=READ_AFTER_ACTIVITY)
    async def read_after(self, inp: StreamRead) -> StreamPage:
        """The loop's settlements appended after the tripwire's cursor, oldest first: one
        indexed read whose work grows with what is new for the loop, capped by ``limit``. An
        untrusted row is logged and left out, and the cursor moves past it."""
        rows = await self._ledger.loop_after(inp.loop, inp.after, inp.since, inp.limit)
        notes = [n for n in (_settled(row, inp.loop) for row in rows) if n is not None]
        last = max((row.sequence for row in rows), default=None)
        return StreamPage(notes=notes, last=last, full=len(rows) >= inp.limit)

    @activity.defn(name=RECORD_TRIP_ACTIVITY)
    async def record_trip(self, inp: TripRecord) -> bool:
        """Append the trip as a ledger event; its key (loop, trip number) makes a retry or a
        replay store nothing more. A different trip under a stored key is a permanent error
        (the ledger keeps the first); a ledger that cannot be reached is retried."""
        try:
            return await self._ledger.append_event(trip_event(inp))
        except EventConflict as exc:
            raise ApplicationError(str(exc), type="TripEventConflict", non_retryable=True) from None

    @activity.defn(name=LAST_TRIP_ACTIVITY)
    async def last_trip(self, loop: str) -> Trip | None:
        """The loop's last trip recorded in the ledger (None if it never tripped)."""
        for event in await self._ledger.events(loop, limit=20):
            if event.kind == TRIP_EVENT:
                return Trip.model_validate(event.body)
        return None


def _settled(row: LoopRow, loop: str) -> Note | None:
    """The row as a settlement, with its sequence; None (logged) for a row the chain does not
    prove, or one with no settle time."""
    receipt = row.receipt
    if not row.trusted or receipt is None:
        task_event(
            "tripwire-untrusted-row",
            role="runner",
            task_id=row.task_id,
            attempt=attempt_of(receipt) if receipt is not None else 0,
            loop=loop,
            sequence=row.sequence,
        )
        return None
    if receipt.settled_at is None:
        return None
    return note_of(receipt).model_copy(update={"sequence": row.sequence})


def _after(at: datetime | None, since: datetime | None) -> bool:
    return at is not None and (since is None or at > since)


def trip_event(inp: TripRecord) -> LedgerEvent:
    return LedgerEvent(
        key=trip_key(inp.loop, inp.trip.number, held=inp.held),
        kind=HELD_EVENT if inp.held else TRIP_EVENT,
        loop=inp.loop,
        at=inp.trip.at,
        body=inp.trip.model_dump(mode="json"),
    )
