"""The tripwire's runner steps, declared once as a typed interface (as ``landed.task.steps``
declares the task's): ``workflows/tripwire.py`` calls them by reference, ``activities/loops.py``
implements them, and the worker assembly types the implementation as this interface."""

from __future__ import annotations

from typing import Protocol

from temporalio import activity

from landed.loops.stream import READ_AFTER_ACTIVITY, StreamPage, StreamRead
from landed.loops.tripwire import CatchUp, Note, Trip, TripRecord
from landed.task.names import CATCH_UP_ACTIVITY, LAST_TRIP_ACTIVITY, RECORD_TRIP_ACTIVITY

__all__ = ["LoopSteps"]


class LoopSteps(Protocol):
    """A tripwire's ledger reads and its trip events (activities.loops.LoopActivities)."""

    @activity.defn(name=CATCH_UP_ACTIVITY)
    async def catch_up(self, inp: CatchUp) -> list[Note]: ...

    @activity.defn(name=READ_AFTER_ACTIVITY)
    async def read_after(self, inp: StreamRead) -> StreamPage: ...

    @activity.defn(name=RECORD_TRIP_ACTIVITY)
    async def record_trip(self, inp: TripRecord) -> bool: ...

    @activity.defn(name=LAST_TRIP_ACTIVITY)
    async def last_trip(self, loop: str) -> Trip | None: ...
