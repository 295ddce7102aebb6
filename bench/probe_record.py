"""``record`` probes on PostgreSQL through the source's pool, beside raw psycopg pool queries.

Both sides run ``select count(*) from <table> where batch = $1`` on a table made for the run
(45 matching rows of 1,000), with the same concurrency and the same pool size. The landed side
is a full ``observe()`` with ``count(45)``: a read-only transaction per probe, rows fetched
one at a time up to the row cap, then rolled back; JSON rows, sha256, expectation and
Observation. The baseline borrows a connection, executes the query and fetches the row.

Target (issue 3): >= 1,000 probes/s through a pool.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
import time
import uuid
from urllib.parse import urlsplit, urlunsplit

import psycopg
from psycopg_pool import AsyncConnectionPool

from bench._probe_common import cpu_line, report, run_bounded
from landed.probes.contract import Count, RecordProbe
from landed.probes.observe import observe
from landed.probes.sources import SourceRegistry

DSN = os.environ.get("LANDED_TEST_POSTGRES", "postgresql://postgres@127.0.0.1:5432/test")
# landed refuses a source role that is a superuser (a probe's SQL could run programs on the
# server): both sides read as this role, made through DSN and granted SELECT on the table.
READER = "landed_bench_reader"


def _reader_dsn() -> str:
    parts = urlsplit(DSN)
    netloc = f"{READER}@{parts.hostname}" + (f":{parts.port}" if parts.port else "")
    return urlunsplit(parts._replace(netloc=netloc))


N = int(os.environ.get("LANDED_BENCH_RECORD_N", "5000"))
CONCURRENCY = int(os.environ.get("LANDED_BENCH_RECORD_CONCURRENCY", "16"))
POOL = int(os.environ.get("LANDED_BENCH_RECORD_POOL", "8"))
TARGET_RATE = 1_000.0


async def _landed(table: str) -> tuple[float, float]:
    probe = RecordProbe(
        source="orders-db", query=f"select count(*) from {table} where batch = %s", params=[123]
    )
    expect = Count(value=45)
    failures = 0
    source = {"url": _reader_dsn(), "pool_size": POOL}
    async with SourceRegistry({"orders-db": source}) as registry:

        async def one(_i: int) -> None:
            nonlocal failures
            obs = await observe(probe, expect, registry=registry, observer="bench")
            if obs.outcome.value != "pass":
                failures += 1

        await run_bounded(200, CONCURRENCY, one)
        cpu = time.process_time()
        elapsed = await run_bounded(N, CONCURRENCY, one)
        cpu = time.process_time() - cpu
    if failures:
        raise SystemExit(f"{failures} probes did not pass; the benchmark measured errors")
    return N / elapsed, cpu / N * 1e6


async def _baseline(table: str) -> tuple[float, float]:
    query = f"select count(*) from {table} where batch = %s"
    async with AsyncConnectionPool(_reader_dsn(), min_size=POOL, max_size=POOL, open=False) as pool:
        await pool.wait()

        async def one(_i: int) -> None:
            async with pool.connection() as conn:
                cur = await conn.execute(query, [123])
                row = await cur.fetchone()
                assert row == (45,)

        await run_bounded(200, CONCURRENCY, one)
        cpu = time.process_time()
        elapsed = await run_bounded(N, CONCURRENCY, one)
        cpu = time.process_time() - cpu
    return N / elapsed, cpu / N * 1e6


def main(argv: list[str] | None = None) -> int:
    table = f"landed_bench_{uuid.uuid4().hex[:10]}"
    try:
        with psycopg.connect(DSN, autocommit=True, connect_timeout=3) as conn:
            conn.execute(f"create table {table} (id serial primary key, batch int)")
            conn.execute(
                f"insert into {table} (batch) select case when g <= 45 then 123 else 1 end "
                "from generate_series(1, 1000) g"
            )
            with contextlib.suppress(psycopg.errors.DuplicateObject):
                conn.execute(f"create role {READER} login")
            conn.execute(f"grant select on {table} to {READER}")
    except psycopg.Error as exc:
        print(f"record probes: PostgreSQL at {DSN} is not available ({exc}); SKIP")
        return 1
    try:
        rate, cpu_us = asyncio.run(_landed(table))
        baseline, baseline_cpu_us = asyncio.run(_baseline(table))
    finally:
        with psycopg.connect(DSN, autocommit=True) as conn:
            conn.execute(f"drop table if exists {table}")
    report(
        f"record probes on PostgreSQL (concurrency {CONCURRENCY}, pool {POOL}, {N:,} probes)",
        rate,
        baseline,
        "probes/s",
        f">= {TARGET_RATE:,.0f}/s",
        rate >= TARGET_RATE,
        rate / baseline,
    )
    cpu_line("record", cpu_us, baseline_cpu_us)
    return 0 if rate >= TARGET_RATE else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
