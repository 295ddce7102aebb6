"""Start-up of ``landed exporter`` to a complete first scrape, cold (no state file: the whole
ledger is read) beside warm (resumed from the state file the cold run saved at its stop), on a
SQLite ledger of N receipts built through the ledger's own bulk append path (``append_many``,
chain links and all, heads signed by a runner key), with a claim for every 100th task and a few
trip events.

Each pair runs twice: checking the chain's links alone, and with the runner's head key
(LANDED_EXPORTER__HEAD_KEYS), whose walk keeps the links its heads need. Target: warm at most
10 s on 1,000,000 receipts. Before each warm run 10 receipts are appended, so it reads
something new; its figures must count them. LANDED_BENCH_EXPORTER_START_N sets N (default
1,000,000).
"""

from __future__ import annotations

import asyncio
import os
import tempfile
import time
from datetime import timedelta
from pathlib import Path

import aiohttp

from bench.ledger_append import receipts
from landed.activities.loops import trip_event
from landed.ledger.base import Ledger
from landed.ledger.chain import HeadSigner
from landed.ledger.factory import open_ledger
from landed.loops.tripwire import Trip, TripRecord
from landed.receipts.model import Receipt
from landed.signing import KeyPair
from landed.telemetry.exporter import Exporter
from landed.telemetry.settings import ExporterSettings

N = int(os.environ.get("LANDED_BENCH_EXPORTER_START_N", "1000000"))
TARGET_S = 10.0
CHUNK = 2000
CLAIM_EVERY = 100
_TEMPLATE = receipts(1, "start")[0]
_KEY = KeyPair.generate()


def _receipt(i: int) -> Receipt:
    assert _TEMPLATE.landed is not None and _TEMPLATE.settled_at is not None
    return _TEMPLATE.model_copy(
        update={
            "task_id": f"start-{i:07d}",
            "owner": f"owner-{i % 150:03d}",  # past the label cap: 'other' is exercised
            "settled_at": _TEMPLATE.settled_at + timedelta(seconds=i),
            "landed": _TEMPLATE.landed.model_copy(update={"loop": f"loop-{i % 20:02d}"}),
        }
    )


async def build(ledger: Ledger, first: int, n: int) -> None:
    for start in range(first, first + n, CHUNK):
        batch = [_receipt(i) for i in range(start, min(start + CHUNK, first + n))]
        for r in batch[::CLAIM_EVERY]:
            await ledger.claim(r.task_id, f"run-{r.task_id}", 1, "0" * 64, owner=r.owner)
        await ledger.append_many(batch)


async def trips(ledger: Ledger) -> None:
    assert _TEMPLATE.settled_at is not None
    for number in (1, 2):
        trip = Trip(number=number, rule="3 not-done in a row", at=_TEMPLATE.settled_at)
        await ledger.append_event(trip_event(TripRecord(loop="loop-01", trip=trip)))


async def start_to_scrape(settings: ExporterSettings) -> tuple[float, Exporter, str]:
    """(seconds from a new exporter to the end of its first /metrics, the exporter, the text)."""
    started = time.perf_counter()
    exporter = Exporter(settings)
    address = await exporter.start()
    async with aiohttp.ClientSession() as http, http.get(f"{address}metrics") as resp:
        text = await resp.text()
        assert resp.status == 200
    took = time.perf_counter() - started
    await exporter.stop()
    return took, exporter, text


def settled_total(text: str) -> float:
    return sum(
        float(line.rsplit(" ", 1)[1])
        for line in text.splitlines()
        if line.startswith("landed_tasks_settled_total{")
    )


async def pair(url: str, state: Path, first: int, keys: list[Path]) -> bool:
    """Cold then warm on ``url``; prints both; whether warm resumed, counted all, met target."""
    settings = ExporterSettings(
        ledger_url=url, port=0, claim_lag_seconds=0, state_path=state, head_keys=keys
    )
    cold, started, _ = await start_to_scrape(settings)
    async with await open_ledger(url, signer=HeadSigner(_KEY)) as ledger:
        await build(ledger, first, 10)
    warm, again, text = await start_to_scrape(settings)
    counted = settled_total(text) == first + 10
    ok = again.resumed and not started.resumed and counted and warm <= TARGET_S
    what = "head keys" if keys else "links alone"
    print(
        f"  {N:>9,} receipts, {what:<11}  cold (no state) {cold:7.2f} s  ({N / cold:,.0f} rows/s)"
    )
    print(
        f"  {N:>9,} receipts, {what:<11}  warm (state)    {warm:7.2f} s  resumed {again.resumed}, "
        f"{again.board.rows_read:,} rows counted; target <= {TARGET_S:.0f} s: "
        f"{'met' if ok else 'MISSED'}"
    )
    return ok


async def run() -> bool:
    with tempfile.TemporaryDirectory(prefix="landed-bench-") as tmp:
        url = f"sqlite:///{Path(tmp) / 'ledger.db'}"
        t0 = time.perf_counter()
        async with await open_ledger(url, signer=HeadSigner(_KEY)) as ledger:
            await build(ledger, 0, N)
            await trips(ledger)
        print(f"exporter start: built {N:,} receipts in {time.perf_counter() - t0:,.1f} s")
        alone = await pair(url, Path(tmp) / "alone.json", N, [])
        keys = [_KEY.save(Path(tmp) / "keys")[1]]
        keyed = await pair(url, Path(tmp) / "keyed.json", N + 10, keys)
    return alone and keyed


def main(argv: list[str] | None = None) -> int:
    return 0 if asyncio.run(run()) else 1
