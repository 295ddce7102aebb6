"""The exporter against real ledgers: its figures are the ledger's, whatever happens to it."""

from __future__ import annotations

import hashlib
import shutil
import sqlite3
import subprocess
from collections.abc import Sequence
from typing import Any

import psycopg
import pytest
from helpers.exporter import Place, exporter_on, get, samples, total
from helpers.scorecard import settled
from psycopg import sql

from landed.ledger.base import Ledger, LedgerRow
from landed.ledger.scan import LedgerScan, RawRow
from landed.receipts.model import Receipt

pytestmark = pytest.mark.slow

MIX = [
    settled("exp-1", owner="alice", loop="nightly"),
    settled("exp-2", owner="alice", loop="nightly", usd=1.25),
    settled("exp-3", owner="bob", verdict="held"),
    settled("exp-4", owner="bob", verdict="blocked", claimed="blocked", usd=None),
    settled("exp-5", owner="carol", verdict="failed", ms=700.0),
]


async def test_the_figures_are_the_ledgers_and_survive_a_restart(
    place: Place, ledger: Ledger
) -> None:
    await ledger.append_many(MIX)
    first = exporter_on(place)
    url = await first.start()
    try:
        status, text = await get(f"{url}metrics")
    finally:
        await first.stop()
    assert status == 200
    found = samples(text)
    assert total(found, "landed_ledger_up") == 1
    assert total(found, "landed_tasks_settled_total") == 5
    assert total(found, "landed_tasks_settled_total", verdict="verified", proof_level="P3") == 2
    assert total(found, "landed_done_claimed_total", owner="alice", loop="nightly") == 2
    assert total(found, "landed_done_proven_total", owner="alice", loop="nightly") == 2
    assert total(found, "landed_done_proven_total") == 2
    assert total(found, "landed_held_total", owner="bob", loop="") == 1
    assert total(found, "landed_blocked_total", owner="bob") == 1
    assert total(found, "landed_cost_usd_total", phase="act", owner="alice") == 1.75
    assert total(found, "landed_probe_observations_total", kind="record", outcome="pass") == 2
    assert total(found, "landed_probe_observations_total", outcome="mismatch") == 3
    assert total(found, "landed_probe_duration_seconds_count", kind="record") == 5
    assert total(found, "landed_probe_duration_seconds_bucket", le="0.5") == 4
    assert total(found, "landed_ledger_rows_rejected_total") == 0
    # A new exporter reads the same ledger to the same figures: nothing lived in the old one.
    second = exporter_on(place)
    url = await second.start()
    try:
        again = samples((await get(f"{url}metrics"))[1])
    finally:
        await second.stop()
    assert again == found


class _Counting:
    """The exporter's scan, counting the rows the ledger hands back."""

    def __init__(self, scan: LedgerScan) -> None:
        self.scan = scan
        self.rows_returned = 0

    async def rows(self, after: int, also: Sequence[int], limit: int) -> list[RawRow]:
        found = await self.scan.rows(after, also, limit)
        self.rows_returned += len(found)
        return found

    def __getattr__(self, name: str) -> Any:
        return getattr(self.scan, name)


async def test_the_cursor_reads_only_the_rows_appended_since(place: Place, ledger: Ledger) -> None:
    await ledger.append_many(MIX[:2])
    exporter = exporter_on(place)
    url = await exporter.start()
    counting = _Counting(exporter.reader.scan)
    exporter.reader.scan = counting
    try:
        assert total(samples((await get(f"{url}metrics"))[1]), "landed_tasks_settled_total") == 2
        assert counting.rows_returned == 0
        await ledger.append(settled("exp-6", owner="dave"))
        reversal = settled("exp-1", owner="alice", loop="nightly", verdict="reversed", attempt=2)
        await ledger.append(reversal)
        found = samples((await get(f"{url}metrics"))[1])
    finally:
        await exporter.stop()
    assert total(found, "landed_tasks_settled_total") == 3
    assert total(found, "landed_done_proven_total", owner="dave") == 1
    assert total(found, "landed_reversals_total", owner="alice", loop="nightly") == 1
    # Each row is read from the ledger once: a scrape asks only for what is new.
    assert counting.rows_returned == 2
    assert exporter.board.rows_read == 4


async def test_claims_count_as_started_with_their_owner_and_loop(
    place: Place, ledger: Ledger
) -> None:
    await ledger.claim("exp-c1", "run-1", 1, "0" * 64)
    await ledger.claim("exp-c2", "run-2", 1, "0" * 64)
    # A task still acting is counted under the owner and loop its claim names.
    await ledger.claim("exp-c4", "run-4", 1, "0" * 64, owner="frank", loop="daily")
    await ledger.append(settled("exp-c1", owner="erin", loop="hourly"))
    exporter = exporter_on(place)
    url = await exporter.start()
    try:
        found = samples((await get(f"{url}metrics"))[1])
        await ledger.claim("exp-c3", "run-3", 1, "0" * 64)
        later = samples((await get(f"{url}metrics"))[1])
    finally:
        await exporter.stop()
    assert total(found, "landed_tasks_started_total", owner="erin", loop="hourly") == 1
    assert total(found, "landed_tasks_started_total", owner="", loop="") == 1
    assert total(found, "landed_tasks_started_total", owner="frank", loop="daily") == 1
    assert total(later, "landed_tasks_started_total") == 4
    # A claim younger than the claim lag waits (PostgreSQL can commit one below it later).
    patient = exporter_on(place, claim_lag_seconds=3600.0)
    url = await patient.start()
    try:
        waiting = samples((await get(f"{url}metrics"))[1])
    finally:
        await patient.stop()
    assert total(waiting, "landed_tasks_started_total") == 0
    assert total(waiting, "landed_tasks_settled_total") == 1


async def test_owners_past_the_cap_fold_into_other(place: Place, ledger: Ledger) -> None:
    await ledger.append_many(
        [settled(f"exp-cap-{i}", owner=f"owner-{i}", loop=f"loop-{i}") for i in range(5)]
    )
    exporter = exporter_on(place, max_label_values=2)
    url = await exporter.start()
    try:
        found = samples((await get(f"{url}metrics"))[1])
    finally:
        await exporter.stop()
    owners = {dict(k[1])["owner"] for k in found if k[0] == "landed_done_claimed_total"}
    loops = {dict(k[1])["loop"] for k in found if k[0] == "landed_done_claimed_total"}
    assert owners == {"owner-0", "owner-1", "other"}
    assert loops == {"loop-0", "loop-1", "other"}
    assert total(found, "landed_done_claimed_total", owner="other") == 3


def _tamper(place: Place) -> None:
    """A row appended with a body that is not the one its hash was taken of."""
    body = '{"claimed_status":"done","task_id":"exp-forged","verdict":"verified"}'
    stale = hashlib.sha256(b"something else").hexdigest()
    values = ("exp-forged", 1, "verified", "mallory", stale, body)
    if place.path is not None:
        with sqlite3.connect(place.path) as conn:
            conn.execute(
                "INSERT INTO landed_receipts (task_id, attempt, verdict, owner, body_sha256, body)"
                " VALUES (?, ?, ?, ?, ?, ?)",
                values,
            )
        return
    with psycopg.connect(place.admin_dsn, autocommit=True) as conn:
        conn.execute(
            sql.SQL(
                "INSERT INTO {} (task_id, attempt, verdict, owner, body_sha256, body)"
                " VALUES (%s, %s, %s, %s, %s, %s)"
            ).format(sql.Identifier(place.schema, "landed_receipts")),
            values,
        )


async def test_a_tampered_row_is_rejected_never_counted(place: Place, ledger: Ledger) -> None:
    # Last: a ledger refuses to append past a row that landed did not chain.
    await ledger.append_many(MIX[:2])
    _tamper(place)
    exporter = exporter_on(place)
    url = await exporter.start()
    try:
        found = samples((await get(f"{url}metrics"))[1])
    finally:
        await exporter.stop()
    assert total(found, "landed_ledger_rows_rejected_total") == 1
    assert total(found, "landed_tasks_settled_total") == 2
    assert total(found, "landed_done_claimed_total", owner="mallory") == 0


def _take_away(place: Place, back: bool = False) -> None:
    if place.path is not None:
        away = place.path.with_suffix(".away")
        src, dst = (away, place.path) if back else (place.path, away)
        shutil.move(src, dst)
        return
    names = [place.schema, f"{place.schema}_away"]
    src, dst = names[::-1] if back else names
    with psycopg.connect(place.admin_dsn, autocommit=True) as conn:
        conn.execute(
            sql.SQL("ALTER SCHEMA {} RENAME TO {}").format(sql.Identifier(src), sql.Identifier(dst))
        )


async def test_a_ledger_that_cannot_be_read_is_up_0_with_the_last_values(
    place: Place, ledger: Ledger
) -> None:
    await ledger.append_many(MIX)
    await ledger.close()
    exporter = exporter_on(place)
    url = await exporter.start()
    try:
        before = samples((await get(f"{url}metrics"))[1])
        _take_away(place)
        status, text = await get(f"{url}metrics")
        page_status, page = await get(url)
        _take_away(place, back=True)
        after = samples((await get(f"{url}metrics"))[1])
    finally:
        await exporter.stop()
    down = samples(text)
    assert status == 200 and page_status == 200
    assert total(down, "landed_ledger_up") == 0
    assert "ledger unreachable" in page
    del before[("landed_ledger_up", ())], down[("landed_ledger_up", ())]
    assert down == before
    assert total(after, "landed_ledger_up") == 1


async def test_promtool_finds_nothing_to_say(place: Place, ledger: Ledger) -> None:
    await ledger.append_many(MIX)
    exporter = exporter_on(place)
    url = await exporter.start()
    try:
        text = (await get(f"{url}metrics"))[1]
    finally:
        await exporter.stop()
    promtool = shutil.which("promtool")
    assert promtool, "promtool is not installed: run `make system-deps`"
    done = subprocess.run(
        [promtool, "check", "metrics"], input=text, capture_output=True, text=True, timeout=30
    )
    assert (done.returncode, done.stdout + done.stderr) == (0, "")


def _insert_at(place: Place, sequence: int, receipt: Receipt) -> None:
    """A row stored under a sequence number of its own choosing: what a PostgreSQL writer
    whose transaction commits after a later one's leaves behind the cursor."""
    row = LedgerRow.of(receipt)
    values = (sequence, row.task_id, 1, row.verdict, row.owner, row.sha256, row.body.decode())
    cols = "(sequence, task_id, attempt, verdict, owner, body_sha256, body)"
    if place.path is not None:
        with sqlite3.connect(place.path) as conn:
            conn.execute(f"INSERT INTO landed_receipts {cols} VALUES (?, ?, ?, ?, ?, ?, ?)", values)
        return
    with psycopg.connect(place.admin_dsn, autocommit=True) as conn:
        conn.execute(
            sql.SQL(
                "INSERT INTO {} " + cols + " OVERRIDING SYSTEM VALUE"
                " VALUES (%s, %s, %s, %s, %s, %s, %s)"
            ).format(sql.Identifier(place.schema, "landed_receipts")),
            values,
        )


async def test_a_row_committed_late_below_the_cursor_is_still_counted(
    place: Place, ledger: Ledger
) -> None:
    await ledger.append(MIX[0])
    _insert_at(place, 1000, MIX[1])  # 2..999 not there yet: the late ones' numbers
    exporter = exporter_on(place)
    url = await exporter.start()
    try:
        before = samples((await get(f"{url}metrics"))[1])
        _insert_at(place, 500, MIX[2])
        after = samples((await get(f"{url}metrics"))[1])
    finally:
        await exporter.stop()
    assert total(before, "landed_tasks_settled_total") == 2
    assert total(after, "landed_tasks_settled_total") == 3
    assert total(after, "landed_held_total", owner="bob") == 1


def _recheck(receipt: Receipt, stage: str) -> Receipt:
    """The row a recheck appends for ``receipt``: confirmed (same verdict) or reversed."""
    assert receipt.landed is not None
    landed = receipt.landed.model_copy(update={"lifecycle": stage})
    verdict = "reversed" if stage == "reversed" else receipt.verdict
    return receipt.model_copy(update={"landed": landed, "verdict": verdict})


async def test_a_rechecks_rows_are_no_new_settlements(place: Place, ledger: Ledger) -> None:
    kept, taken_back = MIX[0], MIX[1]
    await ledger.claim(kept.task_id, "run-k", 1, "0" * 64)
    await ledger.append_many([kept, taken_back])
    await ledger.append_many([_recheck(kept, "confirmed"), _recheck(taken_back, "reversed")])
    exporter = exporter_on(place, claim_lag_seconds=0)
    url = await exporter.start()
    try:
        found = samples((await get(f"{url}metrics"))[1])
    finally:
        await exporter.stop()
    assert total(found, "landed_tasks_settled_total") == 2
    assert total(found, "landed_done_claimed_total") == 2
    assert total(found, "landed_reversals_total", owner="alice", loop="nightly") == 1
    assert total(found, "landed_tasks_started_total", owner="alice", loop="nightly") == 1
