"""Scrape time of ``landed exporter`` at 10,000 and at 1,000,000 settled receipts.

Target: at most 50 ms per scrape (GET /metrics, 10 receipts appended before each) at the large
size, and at most 2x the small size's time: a scrape costs what is new, never the ledger's size.
The small ledger's scrape is the same-run baseline. The one-time catch-up when the exporter
starts (reading every row once) is reported beside, not targeted.
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
import psycopg
from psycopg import sql

from bench.ledger_append import receipts
from landed.ledger.base import Ledger, canonical_json
from landed.ledger.factory import open_ledger
from landed.telemetry.exporter import Exporter
from landed.telemetry.settings import ExporterSettings

SIZES = (10_000, int(os.environ.get("LANDED_BENCH_EXPORTER_N", "1000000")))
TARGET_MS = 50.0
TARGET_RATIO = 2.0
SCRAPES = 40
NEW_PER_SCRAPE = 10
PG_DSN = os.environ.get("LANDED_TEST_POSTGRES", "postgresql://postgres@127.0.0.1:5432/test")
_CLAIM_COLS = "(task_id, run_id, attempt, spec_sha256, claimed_at)"
_COLS = ["task_id", "attempt", "verdict", "owner", "settled_at", "body_sha256", "body"]


def _rows(n: int, tag: str) -> list[tuple[object, ...]]:
    """n stored rows shaped as settle writes them: one template body, its task id varied."""
    template = receipts(1, "template")[0]
    body = canonical_json(template).decode()
    marker = '"task_id":"template-0000000"'
    assert marker in body
    out: list[tuple[object, ...]] = []
    owners = [f"owner-{i}" for i in range(150)]  # past the label cap: 'other' is exercised
    for i in range(n):
        text = body.replace(marker, f'"task_id":"{tag}-{i:08d}"')
        owner = owners[i % len(owners)]
        text = text.replace('"owner":"agent-a"', f'"owner":"{owner}"')
        sha = hashlib.sha256(text.encode()).hexdigest()
        out.append((f"{tag}-{i:08d}", 1, "verified", owner, "2026-11-07T01:00:00+00:00", sha, text))
    return out


def _claims(rows: list[tuple[object, ...]]) -> list[tuple[object, ...]]:
    """The claim each settled task made before its act, as the runner writes it."""
    return [(r[0], f"run-{r[0]}", 1, "0" * 64, "2026-11-07T00:59:59.000000+00:00") for r in rows]


def fill_sqlite(path: Path, n: int) -> None:
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("BEGIN IMMEDIATE")
    for start in range(0, n, 100_000):
        rows = _rows(min(100_000, n - start), f"s{start}")
        conn.executemany(
            f"INSERT INTO landed_receipts ({', '.join(_COLS)}) VALUES (?, ?, ?, ?, ?, ?, ?)",
            rows,
        )
        conn.executemany(
            f"INSERT INTO landed_claims {_CLAIM_COLS} VALUES (?, ?, ?, ?, ?)", _claims(rows)
        )
    conn.execute("COMMIT")
    conn.close()


async def fill_postgres(schema: str, n: int) -> None:
    table = sql.Identifier(schema, "landed_receipts")
    cols = sql.SQL(", ").join(map(sql.Identifier, _COLS))
    claims = sql.Identifier(schema, "landed_claims")
    copying = sql.SQL("COPY {} ({}) FROM STDIN").format(table, cols)
    claiming = sql.SQL("COPY {} " + _CLAIM_COLS + " FROM STDIN").format(claims)
    async with await psycopg.AsyncConnection.connect(PG_DSN) as conn:
        for start in range(0, n, 100_000):
            rows = _rows(min(100_000, n - start), f"p{start}")
            async with conn.cursor() as cur, cur.copy(copying) as copy:
                for row in rows:
                    await copy.write_row(row)
            async with conn.cursor() as cur, cur.copy(claiming) as copy:
                for row in _claims(rows):
                    await copy.write_row(row)
        await conn.commit()
        # A ledger that grew to this size over months has been vacuumed and analysed; one
        # filled a second ago would have autovacuum reading it during the timed scrapes.
        await conn.set_autocommit(True)
        await conn.execute(sql.SQL("VACUUM ANALYZE {}").format(table))
        await conn.execute(sql.SQL("VACUUM ANALYZE {}").format(claims))


async def scrape_times(url: str, ledger: Ledger) -> tuple[float, float]:
    """(catch-up seconds, median scrape ms) of an exporter started on ``url``."""
    exporter = Exporter(ExporterSettings(ledger_url=url, port=0, claim_lag_seconds=0))
    started = time.perf_counter()
    address = await exporter.start()
    catch_up = time.perf_counter() - started
    times = []
    try:
        async with aiohttp.ClientSession() as http:
            for i in range(SCRAPES):
                await ledger.append_many(
                    receipts(NEW_PER_SCRAPE, f"new-{uuid.uuid4().hex[:6]}-{i}")
                )
                t0 = time.perf_counter()
                async with http.get(f"{address}metrics") as resp:
                    await resp.read()
                    assert resp.status == 200
                times.append((time.perf_counter() - t0) * 1000)
    finally:
        await exporter.stop()
    assert exporter.collector.up
    return catch_up, statistics.median(times)


async def run_backend(name: str) -> bool:
    figures = []
    for n in SIZES:
        if name == "SQLite":
            with tempfile.TemporaryDirectory(prefix="landed-bench-") as tmp:
                url = f"sqlite:///{Path(tmp) / 'ledger.db'}"
                async with await open_ledger(url) as ledger:
                    fill_sqlite(Path(tmp) / "ledger.db", n)
                    figures.append((n, *await scrape_times(url, ledger)))
            continue
        schema = f"bench_exporter_{uuid.uuid4().hex[:8]}"
        url = f"{PG_DSN}?schema={schema}&writer_role=bench_exporter_writer"
        try:
            async with await open_ledger(url) as ledger:
                await fill_postgres(schema, n)
                figures.append((n, *await scrape_times(url, ledger)))
        finally:
            async with await psycopg.AsyncConnection.connect(PG_DSN, autocommit=True) as conn:
                await conn.execute(
                    sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema))
                )
    return report(name, figures)


def report(name: str, figures: list[tuple[int, float, float]]) -> bool:
    (small, _, base), (large, catch_up, big) = figures[0], figures[-1]
    ratio = big / base
    ok = big <= TARGET_MS and ratio <= TARGET_RATIO
    print(
        f"exporter scrape, {name}: median of {SCRAPES} scrapes, {NEW_PER_SCRAPE} new receipts each"
    )
    for n, up, ms in figures:
        print(
            f"  {n:>9,} receipts  scrape {ms:7.2f} ms  (catch-up at start {up:7.1f} s, "
            f"{n / up:,.0f} rows/s)"
        )
    print(
        f"  ratio {large:,} / {small:,} (baseline) = {ratio:.2f}; target <= {TARGET_MS:.0f} ms "
        f"and ratio <= {TARGET_RATIO:.0f}: {'met' if ok else 'MISSED'}  (catch-up {catch_up:.1f} s)"
    )
    return ok


async def run() -> bool:
    # LANDED_BENCH_EXPORTER_BACKENDS=postgres (or sqlite) runs one backend only.
    only = os.environ.get("LANDED_BENCH_EXPORTER_BACKENDS", "sqlite,postgres")
    ok = await run_backend("SQLite") if "sqlite" in only else True
    if "postgres" not in only:
        return ok
    try:
        async with await psycopg.AsyncConnection.connect(PG_DSN, connect_timeout=3):
            pass
    except psycopg.Error as exc:
        print(f"exporter scrape, PostgreSQL: skipped ({exc})")
        return ok
    return await run_backend("PostgreSQL") and ok


def main(argv: list[str] | None = None) -> int:
    return 0 if asyncio.run(run()) else 1
