"""The ledger as a loop's stream, as pure decisions: where a tripwire's stream opens, how its
cursor and floor move as it reads, and what it asks the ledger next."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from landed.loops.stream import MARGIN, StreamPage, open_stream, read_of, take
from landed.loops.tripwire import Note, TripwireState

T0 = datetime(2026, 12, 1, tzinfo=UTC)


def note(i: int, seq: int | None, minute: int, verdict: str = "failed") -> Note:
    at = T0 + timedelta(minutes=minute)
    return Note(task_id=f"nightly@{i}", verdict=verdict, settled_at=at, sequence=seq)


def test_a_stream_opens_past_what_the_start_read_already_took_in() -> None:
    state = TripwireState(loop="nightly", armed_at=T0)
    open_stream(state, [note(1, 40, 10), note(2, 52, 30), note(3, 47, 20)], T0)
    read = read_of(state)
    # Past the newest row read (commit order), from MARGIN before the newest settled.
    assert (read.loop, read.after, read.since) == (
        "nightly",
        52,
        T0 + timedelta(minutes=30) - MARGIN,
    )
    again = state.model_copy()
    open_stream(again, [note(4, 99, 90)], None)  # already open: nothing moves
    assert (again.cursor, again.floor) == (52, state.floor)


def test_a_stream_opened_on_nothing_read_starts_at_the_last_trip() -> None:
    state = TripwireState(loop="nightly", armed_at=T0)
    open_stream(state, [], T0 - timedelta(days=3))
    assert (state.cursor, state.floor) == (0, T0 - timedelta(days=3))
    fresh = TripwireState(loop="nightly", armed_at=T0)
    open_stream(fresh, [], None)  # a loop with no settlement at all: all of it is new
    assert read_of(fresh).since is None and read_of(fresh).after == 0


def test_a_stream_opened_on_a_state_from_before_it_starts_behind_its_recent_runs() -> None:
    """A run carried on from one before the stream: its recent notes (from signals, with no
    sequence) move only the floor, so the first read scans the last MARGIN, not the loop."""
    state = TripwireState(loop="nightly", armed_at=T0, recent=[note(1, None, 600)])
    open_stream(state, [], T0)
    assert state.cursor == 0 and state.floor == T0 + timedelta(minutes=600) - MARGIN


def test_the_cursor_moves_past_every_row_read_and_the_floor_only_forward() -> None:
    state = TripwireState(loop="nightly", cursor=10, floor=T0)
    take(state, StreamPage(notes=[note(1, 12, 60), note(2, 15, 50)], last=15))
    assert (state.cursor, state.floor) == (15, T0 + timedelta(minutes=60) - MARGIN)
    # An untrusted row past them (left out of the notes) still moves the cursor.
    take(state, StreamPage(notes=[], last=21))
    assert state.cursor == 21
    # A late row settled long before moves neither the floor back nor the cursor back.
    take(state, StreamPage(notes=[note(3, 22, 1)], last=22))
    assert (state.cursor, state.floor) == (22, T0 + timedelta(minutes=60) - MARGIN)
    take(state, StreamPage(notes=[], last=None))  # nothing new
    assert state.cursor == 22
