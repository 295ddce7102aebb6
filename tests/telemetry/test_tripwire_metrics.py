"""Tripwire metrics through the exporter, on both ledgers: trips per loop and rule from the
ledger's trip events (each counted once, however often it is read), open repairs until a
repair task of the trip settles verified, held trips until the loop verifies again."""

from __future__ import annotations

from datetime import timedelta

import pytest
from helpers.exporter import Place, exporter_on, get, samples, total
from helpers.scorecard import AT, settled

from landed.activities.loops import trip_event
from landed.ledger.base import Ledger
from landed.loops.tripwire import Trip, TripRecord

pytestmark = pytest.mark.slow


def tripped(loop: str, number: int, rule: str, repair: bool, minutes: int = 0) -> TripRecord:
    at = AT - timedelta(minutes=60 - minutes)
    task_id = f"repair-{loop}-{number}-1" if repair else None
    trip = Trip(number=number, rule=rule, at=at, receipts=[f"{loop}@0#1"], repair_task_id=task_id)
    return TripRecord(loop=loop, trip=trip)


async def scrape(place: Place) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    exporter = exporter_on(place)
    url = await exporter.start()
    try:
        return samples((await get(f"{url}metrics"))[1])
    finally:
        await exporter.stop()


async def test_trips_and_repairs_are_the_ledgers(place: Place, ledger: Ledger) -> None:
    await ledger.append(settled("night@0", loop="nightly", verdict="failed"))
    for record in (
        tripped("nightly", 1, "3 not-done in a row", repair=True),
        tripped("nightly", 2, "no verified settlement in 0:30:00", repair=True, minutes=10),
        tripped("hourly", 1, "proof rate 0.40 below 0.80 over the last 10", repair=False),
    ):
        assert await ledger.append_event(trip_event(record)) is True
    await ledger.append(settled("repair-nightly-1-1", loop="nightly"))  # the first is repaired
    found = await scrape(place)
    assert total(found, "landed_tripwire_trips_total", loop="nightly") == 2
    assert total(found, "landed_tripwire_trips_total", loop="nightly", rule="silence") == 1
    assert total(found, "landed_tripwire_trips_total", loop="nightly", rule="proof_floor") == 0
    assert total(found, "landed_tripwire_trips_total", loop="hourly", rule="proof_floor") == 1
    assert total(found, "landed_repairs_open", loop="nightly") == 1  # trip 2's repair
    assert total(found, "landed_repairs_open", loop="hourly") == 0
    assert total(found, "landed_repairs_held", loop="hourly") == 1  # no repair act: a person
    # The same trip written again (a retried activity) stores nothing and counts nothing; the
    # second trip's retried repair lands, and the held loop verifies after its trip.
    assert (
        await ledger.append_event(
            trip_event(tripped("nightly", 2, "no verified settlement in 0:30:00", True, 10))
        )
        is False
    )
    await ledger.append(settled("repair-nightly-2-2", loop="nightly"))
    await ledger.append(settled("hour@1", loop="hourly"))
    later = await scrape(place)
    assert total(later, "landed_tripwire_trips_total") == 3
    assert total(later, "landed_repairs_open") == 0
    assert total(later, "landed_repairs_held") == 0


async def test_a_repair_whose_retries_ran_out_is_held_not_open(
    place: Place, ledger: Ledger
) -> None:
    """The tripwire appends a hold event when the repair's retries run out: the loop counts as
    held for a person, and a person's repair of that trip that verifies clears it."""
    record = tripped("feed", 1, "3 not-done in a row", repair=True)
    assert await ledger.append_event(trip_event(record)) is True
    await ledger.append(settled("repair-feed-1-1", loop="feed", verdict="failed"))
    found = await scrape(place)
    assert total(found, "landed_repairs_open", loop="feed") == 1  # still retried
    assert total(found, "landed_repairs_held", loop="feed") == 0
    await ledger.append(settled("repair-feed-1-2", loop="feed", verdict="failed"))
    held = record.model_copy(update={"held": True})
    assert await ledger.append_event(trip_event(held)) is True
    assert await ledger.append_event(trip_event(held)) is False  # a retried write: once
    found = await scrape(place)
    assert total(found, "landed_repairs_open", loop="feed") == 0
    assert total(found, "landed_repairs_held", loop="feed") == 1
    assert total(found, "landed_tripwire_trips_total", loop="feed") == 1  # a hold is no trip
    await ledger.append(settled("repair-feed-1-3", loop="feed"))  # a person's, read back
    found = await scrape(place)
    assert total(found, "landed_repairs_held", loop="feed") == 0
