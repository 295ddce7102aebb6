"""The exporter's labels stay bounded: a ledger of 1,000,000 receipts from 10,000 owners and
1,000 loops, read with the default label cap (100 owners, 100 loops named; the rest `other`).

Targets: a scrape (GET /metrics, 10 receipts appended before each, median of 40) at most 50 ms,
and the /metrics text under 1 MiB, however many owners and loops the ledger names. Reported
beside: the series count, the folds counted in landed_label_folds_total, the catch-up.
LANDED_BENCH_CARDINALITY_N sets the receipt count (1,000,000).
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import sqlite3
import statistics
import tempfile
import time
import uuid
from pathlib import Path

import aiohttp

from bench.ledger_append import receipts
from landed.ledger.base import Ledger, canonical_json
from landed.ledger.chain import ChainHead
from landed.ledger.factory import open_ledger
from landed.telemetry.exporter import Exporter
from landed.telemetry.settings import ExporterSettings

N = int(os.environ.get("LANDED_BENCH_CARDINALITY_N", "1000000"))
OWNERS, LOOPS = 10_000, 1_000
TARGET_MS = 50.0
TARGET_BYTES = 1024 * 1024
SCRAPES = 40
NEW_PER_SCRAPE = 10
_COLS = (
    "(sequence, task_id, attempt, verdict, owner, settled_at, body_sha256, body, chain_pos, "
    "chain_link)"
)


def _rows(start: int, n: int) -> list[tuple[object, ...]]:
    body = canonical_json(receipts(1, "template")[0]).decode()
    out: list[tuple[object, ...]] = []
    for i in range(start, start + n):
        owner, loop = f"owner-{i % OWNERS:05d}", f"loop-{i % LOOPS:04d}"
        text = body.replace('"task_id":"template-0000000"', f'"task_id":"c-{i:08d}"')
        text = text.replace('"owner":"agent-a"', f'"owner":"{owner}"')
        text = text.replace('"landed":{"attempt":1,', f'"landed":{{"attempt":1,"loop":"{loop}",')
        sha = hashlib.sha256(text.encode()).hexdigest()
        out.append((f"c-{i:08d}", 1, "verified", owner, "2026-11-07T01:00:00+00:00", sha, text))
    return out


def fill(path: Path, n: int) -> None:
    """Rows as the runner appends them, each linked on the hash chain as it would be."""
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("BEGIN IMMEDIATE")
    head = ChainHead()
    for start in range(0, n, 100_000):
        linked = []
        for row in _rows(start, min(100_000, n - start)):
            head = head.next(head.sequence + 1, str(row[5]))
            linked.append((head.sequence, *row, head.pos, head.link))
        marks = ", ".join("?" * 10)
        conn.executemany(f"INSERT INTO landed_receipts {_COLS} VALUES ({marks})", linked)
    conn.execute("COMMIT")
    conn.close()


async def measure(url: str, ledger: Ledger) -> tuple[float, float, bytes]:
    exporter = Exporter(ExporterSettings(ledger_url=url, port=0, claim_lag_seconds=0))
    started = time.perf_counter()
    address = await exporter.start()
    catch_up = time.perf_counter() - started
    times, body = [], b""
    try:
        async with aiohttp.ClientSession() as http:
            for i in range(SCRAPES):
                await ledger.append_many(receipts(NEW_PER_SCRAPE, f"n-{uuid.uuid4().hex[:6]}-{i}"))
                t0 = time.perf_counter()
                async with http.get(f"{address}metrics") as resp:
                    body = await resp.read()
                times.append((time.perf_counter() - t0) * 1000)
    finally:
        await exporter.stop()
    return catch_up, statistics.median(times), body


def _figures(body: bytes) -> tuple[int, int, int, float, float]:
    text = body.decode()
    lines = [x for x in text.splitlines() if x and not x.startswith("#")]
    owners = {x.split('owner="', 1)[1].split('"', 1)[0] for x in lines if 'owner="' in x}
    loops = {x.split('loop="', 1)[1].split('"', 1)[0] for x in lines if 'loop="' in x}
    folds = {
        x.split('label="', 1)[1].split('"', 1)[0]: float(x.rsplit(" ", 1)[1])
        for x in lines
        if x.startswith("landed_label_folds_total{")
    }
    return len(lines), len(owners), len(loops), folds.get("owner", 0.0), folds.get("loop", 0.0)


async def run() -> bool:
    with tempfile.TemporaryDirectory(prefix="landed-bench-") as tmp:
        url = f"sqlite:///{Path(tmp) / 'ledger.db'}"
        async with await open_ledger(url) as ledger:
            fill(Path(tmp) / "ledger.db", N)
            catch_up, ms, body = await measure(url, ledger)
    series, owners, loops, owner_folds, loop_folds = _figures(body)
    ok = ms <= TARGET_MS and len(body) <= TARGET_BYTES
    print(f"exporter cardinality: {N:,} receipts, {OWNERS:,} owners, {LOOPS:,} loops, cap 100")
    print(
        f"  scrape {ms:.2f} ms (median of {SCRAPES}, {NEW_PER_SCRAPE} new each); /metrics "
        f"{len(body):,} bytes, {series:,} series; {owners} owner and {loops} loop values named "
        f"(with 'other' and ''); folds: owner {owner_folds:,.0f}, loop {loop_folds:,.0f}; "
        f"catch-up {catch_up:.1f} s"
    )
    print(
        f"  target <= {TARGET_MS:.0f} ms and <= {TARGET_BYTES:,} bytes: {'met' if ok else 'MISSED'}"
    )
    return ok


def main(argv: list[str] | None = None) -> int:
    return 0 if asyncio.run(run()) else 1


if __name__ == "__main__":
    raise SystemExit(main())
