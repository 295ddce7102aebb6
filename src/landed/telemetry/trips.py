"""Tripwire figures from the ledger (GOV-9): trips per loop and rule from the append-only trip
events, and each loop's open or held repair from its last trip and the receipts settled since.

A repair is open from its trip until a repair task of that trip (``repair-<loop>-<trip>-<n>``)
settles verified. A trip that queued no repair of its own is held for a person until one of
the loop's own tasks settles verified after it (the read-back of a loop without a repair act).
A repair whose retries ran out is held too: the tripwire appends a hold event for that trip,
and it stays held until a repair task of the trip (a person's read-back) settles verified."""

from __future__ import annotations

from collections import Counter
from datetime import datetime

import orjson
from pydantic import BaseModel, ConfigDict

from landed.loops.tripwire import Trip, rule_kind
from landed.receipts.model import Receipt
from landed.task.names import HELD_EVENT, TRIP_EVENT
from landed.telemetry.labels import LabelCap

__all__ = ["TripBoard", "TripState"]


class TripState(BaseModel):
    """A TripBoard as a saved exporter state holds it (landed.telemetry.state)."""

    model_config = ConfigDict(extra="forbid", strict=True)

    read: int
    trips: list[tuple[tuple[str, str], int]]
    seen: list[str]
    last: dict[str, Trip]
    repaired: list[tuple[str, int]]
    held: list[tuple[str, int]]
    verified_at: dict[str, datetime]


class TripBoard:
    """What the exporter has read of trips and repairs; every figure is recomputed from it."""

    def __init__(self, loops: LabelCap) -> None:
        self._loops = loops
        self.read = 0
        self.trips: Counter[tuple[str, str]] = Counter()
        self._seen: set[str] = set()
        self._last: dict[str, Trip] = {}
        #: (loop, trip number) of every repair task that settled verified.
        self._repaired: set[tuple[str, int]] = set()
        #: (loop, trip number) of every trip whose repair retries ran out (a hold event).
        self._held: set[tuple[str, int]] = set()
        #: The newest verified settlement of each loop's own tasks.
        self._verified_at: dict[str, datetime] = {}

    def add_event(self, key: str, kind: str, loop: str | None, body: str) -> None:
        """One event row; a row read again (the reader re-reads a margin) counts once."""
        if kind not in (TRIP_EVENT, HELD_EVENT) or loop is None or key in self._seen:
            return
        try:
            trip = Trip.model_validate(orjson.loads(body))
        except (orjson.JSONDecodeError, ValueError):
            return  # not a trip this code can read: never counted as one
        self._seen.add(key)
        if kind == HELD_EVENT:
            self._held.add((loop, trip.number))
            return
        self.read += 1
        self.trips[(self._loops.fold(loop), rule_kind(trip.rule))] += 1
        last = self._last.get(loop)
        if last is None or trip.number > last.number:
            self._last[loop] = trip

    def add_receipt(self, receipt: Receipt) -> None:
        if receipt.verdict != "verified":
            return
        if receipt.task_id.startswith("repair-"):
            head, number, _attempt = receipt.task_id.rsplit("-", 2)
            if number.isdigit():
                self._repaired.add((head.removeprefix("repair-"), int(number)))
            return
        loop = receipt.landed.loop if receipt.landed is not None else None
        at = receipt.settled_at
        if loop is not None and at is not None:
            last = self._verified_at.get(loop)
            self._verified_at[loop] = at if last is None else max(last, at)

    def repairs(self) -> tuple[Counter[str], Counter[str]]:
        """(open, held) per loop label: each loop's last trip, if still unrepaired."""
        open_, held = Counter[str](), Counter[str]()
        for loop, trip in self._last.items():
            label = self._loops.fold(loop)
            if trip.repair_task_id is not None:
                unrepaired = int((loop, trip.number) not in self._repaired)
                if (loop, trip.number) in self._held:
                    held[label] += unrepaired
                else:
                    open_[label] += unrepaired
            else:
                since = self._verified_at.get(loop)
                held[label] += int(since is None or since <= trip.at)
        return open_, held

    def state(self) -> TripState:
        return TripState(
            read=self.read,
            trips=list(self.trips.items()),
            seen=sorted(self._seen),
            last=dict(self._last),
            repaired=sorted(self._repaired),
            held=sorted(self._held),
            verified_at=dict(self._verified_at),
        )

    def restore(self, state: TripState) -> None:
        self.read = state.read
        self.trips = Counter(dict(state.trips))
        self._seen = set(state.seen)
        self._last = dict(state.last)
        self._repaired = set(state.repaired)
        self._held = set(state.held)
        self._verified_at = dict(state.verified_at)

    def loops(self) -> set[str]:
        return {loop for loop, _ in self.trips}
