"""The ledger as a loop's durable stream of settlements (GOV-9).

The settle step's signal is the tripwire's fast path, and a runner that dies before its batch
is sent loses it. The ledger keeps every settlement, so the tripwire reads its loop's rows
after a cursor (the sequence of the last row it took in: commit order on both backends) on
every wake-up and at least every ``EVERY``; a row a signal already brought is dropped by its
(task id, attempt). The read starts from ``floor`` on settled_at, moved up to ``MARGIN`` before
the newest row taken, so it scans what is new for the loop, not the loop's history; a row
committed more than ``MARGIN`` after a newer one of its loop (a settle retried that long) is
left to the read before a silence trip.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from pydantic import BaseModel, Field

from landed.loops.tripwire import Note, TripwireState

__all__ = [
    "EVERY",
    "MARGIN",
    "PAGES",
    "READ_AFTER_ACTIVITY",
    "StreamPage",
    "StreamRead",
    "open_stream",
    "read_of",
    "take",
]

#: The activity that reads the stream (LoopSteps.read_after), as histories record it.
READ_AFTER_ACTIVITY = "landed.tripwire.read_after"
#: The longest a tripwire waits between two reads of its stream (its silence timer aside).
EVERY = timedelta(seconds=30)
#: How far behind the newest row taken the next read starts (on settled_at).
MARGIN = timedelta(minutes=15)
#: Pages read per wake-up at most; a longer backlog is read on the next, at once.
PAGES = 5


class StreamRead(BaseModel):
    """The read_after activity's input: ``loop``'s settle rows past sequence ``after`` and
    settled after ``since``, the oldest ``limit`` of them."""

    loop: str
    after: int = Field(ge=0)
    since: datetime | None = None
    limit: int = Field(default=100, ge=1, le=1000)


class StreamPage(BaseModel):
    """What one read found: the trusted settlements, oldest first, and the last sequence read
    (an untrusted row is logged and passed: the cursor moves past it)."""

    notes: list[Note] = Field(default_factory=list)
    last: int | None = None
    full: bool = False


def open_stream(state: TripwireState, caught: list[Note], since: datetime | None) -> None:
    """Open the stream of a tripwire that has none: past what it has already taken in (the
    start's catch-up read from ``since``, or the notes a run before the stream carried)."""
    if state.cursor is not None:
        return
    state.cursor = 0
    state.floor = since
    take(state, StreamPage(notes=[*state.recent, *caught]))


def take(state: TripwireState, page: StreamPage) -> None:
    """Move the cursor past what a read returned, and the floor up behind its newest row."""
    sequences = [n.sequence for n in page.notes if n.sequence is not None]
    if page.last is not None:
        sequences.append(page.last)
    state.cursor = max([state.cursor or 0, *sequences])
    newest = max((n.settled_at for n in page.notes if n.settled_at is not None), default=None)
    if newest is not None and (state.floor is None or newest - MARGIN > state.floor):
        state.floor = newest - MARGIN


def read_of(state: TripwireState, limit: int = 100) -> StreamRead:
    """The next read of the stream (opened)."""
    assert state.cursor is not None
    return StreamRead(loop=state.loop, after=state.cursor, since=state.floor, limit=limit)
