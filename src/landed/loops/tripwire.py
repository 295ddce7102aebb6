"""The tripwire's decisions (GOV-9), as pure functions of what it has seen: which settlement
trips which rule, when silence trips, and what a repair's verdict does next. The Tripwire
workflow only feeds these and acts on their answers."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Literal

from pydantic import BaseModel, Field

from landed.loops.spec import LoopSpec, RepairSpec, TripwireRules, repair_task_id

__all__ = [
    "CatchUp",
    "Note",
    "Trip",
    "TripRecord",
    "TripwireInput",
    "TripwireState",
    "accept",
    "after_repair",
    "person_repair",
    "rule_kind",
    "rule_tripped",
    "silence_deadline",
    "trip",
    "trip_key",
    "unseen",
]

Phase = Literal["healthy", "tripped", "repairing", "held"]
#: How many settled (task id, attempt) keys a tripwire remembers to drop a repeated signal.
_SEEN = 500


class Note(BaseModel):
    """A settled receipt of a loop's task, as the settle step signals it."""

    task_id: str
    attempt: int = 1
    verdict: str | None = None
    settled_at: datetime | None = None
    #: Its ledger row's sequence, when read from the ledger (a signal's note carries none).
    sequence: int | None = None

    @property
    def key(self) -> str:
        return f"{self.task_id}#{self.attempt}"

    @property
    def verified(self) -> bool:
        return self.verdict == "verified"


class Trip(BaseModel):
    """One trip: the rule, when, the receipts that tripped it, the repair it queued."""

    number: int
    rule: str
    at: datetime
    receipts: list[str] = Field(default_factory=list)
    repair_task_id: str | None = None


class TripwireState(BaseModel):
    """Everything the tripwire carries across continue-as-new (and shows on its query)."""

    loop: str
    phase: Phase = "healthy"
    declared: bool = Field(default=False, description="Started with the loop's declaration.")
    armed_at: datetime | None = None
    last_verified_at: datetime | None = None
    recent: list[Note] = Field(default_factory=list)
    seen: list[str] = Field(default_factory=list)
    trips: list[Trip] = Field(default_factory=list)
    repair_task_id: str | None = None
    repair_attempt: int = 0
    retry_at: datetime | None = None
    repairs_verified: int = 0
    #: The ledger stream (landed.loops.stream): the sequence of the last loop row taken in
    #: (None: no stream opened yet), and the settled_at floor the next read starts from.
    cursor: int | None = None
    floor: datetime | None = None

    @property
    def last_trip(self) -> Trip | None:
        return self.trips[-1] if self.trips else None


class TripwireInput(BaseModel):
    """The Tripwire's start: its loop, its declaration (None for a loop of ad-hoc tasks:
    default rules, no silence rule, no repair of its own), and the state it carries on."""

    loop: str
    spec: LoopSpec | None = None
    state: TripwireState | None = None
    #: Events after which the tripwire continues as new (its history stays bounded).
    history_limit: int = Field(default=2000, ge=50, le=40000)


def accept(state: TripwireState, note: Note, window: int) -> bool:
    """Record a loop task's settlement; False for one already seen (a repeated signal)."""
    if note.key in state.seen:
        return False
    state.seen = [*state.seen, note.key][-_SEEN:]
    state.recent = [*state.recent, note][-window:]
    if note.verified and note.settled_at is not None:
        last = state.last_verified_at
        state.last_verified_at = note.settled_at if last is None else max(last, note.settled_at)
    return True


def unseen(state: TripwireState, notes: list[Note]) -> list[Note]:
    """The loop runs among ``notes`` (read back from the ledger) that no signal brought: not
    seen, and not a repair's (a repair's verdict counts only when its own signal brings it)."""
    repair = f"repair-{state.loop}-"
    return [n for n in notes if n.key not in state.seen and not n.task_id.startswith(repair)]


def rule_tripped(state: TripwireState, rules: TripwireRules) -> tuple[str, list[str]] | None:
    """The rule the recent settlements break (and their task ids), else None."""
    if state.phase != "healthy":
        return None
    n = rules.not_done_in_a_row
    tail = state.recent[-n:]
    if len(tail) == n and not any(t.verified for t in tail):
        return f"{n} not-done in a row", [t.key for t in tail]
    k = rules.window
    if rules.proof_floor is not None and len(state.recent) >= k:
        last = state.recent[-k:]
        rate = sum(t.verified for t in last) / k
        if rate < rules.proof_floor:
            return f"proof rate {rate:.2f} below {rules.proof_floor:.2f} over the last {k}", [
                t.key for t in last
            ]
    return None


def silence_deadline(state: TripwireState, silence: timedelta | None) -> datetime | None:
    """When silence trips: ``silence`` after the last verified settlement (or arming)."""
    if silence is None or state.phase != "healthy":
        return None
    since = max(t for t in (state.last_verified_at, state.armed_at) if t is not None)
    return since + silence


def trip(state: TripwireState, rule: str, receipts: list[str], at: datetime, repair: bool) -> Trip:
    """Record a trip; with a repair declared, the repair's first task id."""
    # Numbered on from the last trip: ``trips`` keeps only the newest 20, and a tripwire
    # started again carries on from the ledger's last trip (trip_key names each one once).
    number = state.trips[-1].number + 1 if state.trips else 1
    task_id = repair_task_id(state.loop, number, 1) if repair else None
    record = Trip(number=number, rule=rule, at=at, receipts=receipts, repair_task_id=task_id)
    state.trips = [*state.trips, record][-20:]
    state.repair_attempt = 1 if repair else 0
    state.repair_task_id = task_id
    state.phase = "repairing" if repair else "held"
    return record


def after_repair(state: TripwireState, note: Note, repair: RepairSpec, now: datetime) -> Phase:
    """A repair's verdict: verified re-arms; not verified retries with a doubling backoff up
    to the cap, then holds for a person."""
    if note.verified:
        state.phase = "healthy"
        state.armed_at = now
        state.recent = []
        state.repair_task_id = None
        state.retry_at = None
        state.repairs_verified += 1
    elif state.repair_attempt >= repair.attempts:
        state.phase = "held"
        state.retry_at = None
    else:
        state.retry_at = now + repair.backoff * (2 ** (state.repair_attempt - 1))
        state.repair_attempt += 1
        number = state.last_trip.number if state.last_trip else 1
        state.repair_task_id = repair_task_id(state.loop, number, state.repair_attempt)
    return state.phase


def person_repair(state: TripwireState) -> str | None:
    """A person says a held loop is repaired: the task id that reads it back (None when the
    loop is not held: there is nothing to read back)."""
    if state.phase != "held" or state.last_trip is None:
        return None
    state.repair_attempt += 1
    state.repair_task_id = repair_task_id(state.loop, state.last_trip.number, state.repair_attempt)
    state.phase = "repairing"
    state.retry_at = None
    return state.repair_task_id


class CatchUp(BaseModel):
    """The catch_up activity's input: the loop's settlements after ``since`` (all when None),
    the newest ``limit`` of them."""

    loop: str
    since: datetime | None = None
    limit: int = Field(default=100, ge=1, le=1000)


def trip_key(loop: str, number: int, *, held: bool = False) -> str:
    """The trip's ledger event key (``held``: its hold's): one event per loop and trip number,
    however often the activity that writes it is retried or its workflow replayed."""
    return f"{'held' if held else 'trip'}:{loop}:{number}"


class TripRecord(BaseModel):
    """The record_trip activity's input: the loop's trip, as the ledger keeps it; ``held``:
    the trip's repair retries ran out and it waits for a person (an event of its own)."""

    loop: str
    trip: Trip
    held: bool = False


def rule_kind(rule: str) -> str:
    """A trip's rule as a bounded metric label (its text carries figures: a rate, a window)."""
    if rule.startswith("no verified settlement"):
        return "silence"
    if rule.endswith("not-done in a row"):
        return "not_done_in_a_row"
    if rule.startswith("proof rate"):
        return "proof_floor"
    return "other"
