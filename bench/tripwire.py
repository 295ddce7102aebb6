"""The tripwire's read of its loop's stream, at a ledger of 10,000 and of 1,000,000 receipts:
its time per read must not grow with the ledger (target: at most 2x at the larger size).

Each ledger is built through landed's own append path (``append_many``), as
``bench.ledger_reads`` builds it (its builder: tasks spread over 100 loops, settled a second
apart). On each, the tripwire's ``read_after`` activity (landed.loops.stream) is timed with its
cursor where a running tripwire keeps it, right behind its loop's newest rows:

- nothing new: the cursor at the loop's newest row (the read on a timer with nothing to take in)
- 10 new: the loop's 10 newest rows after the cursor (a signal's wake-up after a batch)

Each figure is the median of ROUNDS reads over the loops, after the runner's chain walk at
open (a loop the builder leaves with too few rows is passed over).
LANDED_BENCH_TRIPWIRE_SIZES sets the two sizes (default "10000,1000000");
LANDED_BENCH_TRIPWIRE_BACKENDS the backends (default "sqlite,postgres").
"""

from __future__ import annotations

import asyncio
import os
import sys
import tempfile
import time
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import psycopg
from psycopg import sql

from bench.ledger_append import PG_DSN
from bench.ledger_reads import LOOPS, median_ms, populate
from landed.activities.loops import LoopActivities
from landed.ledger.base import Ledger
from landed.ledger.factory import open_ledger
from landed.loops.stream import MARGIN, StreamRead

SIZES = [int(n) for n in os.environ.get("LANDED_BENCH_TRIPWIRE_SIZES", "10000,1000000").split(",")]
BACKENDS = os.environ.get("LANDED_BENCH_TRIPWIRE_BACKENDS", "sqlite,postgres").split(",")
TARGET = 2.0
NEW = (0, 10)


async def _cursor(ledger: Ledger, loop: str, new: int) -> StreamRead | None:
    """The read of a tripwire whose cursor has ``new`` of its loop's rows after it (None for
    a loop with fewer rows: the builder leaves a few loops empty for its own "few" loop)."""
    rows = await ledger.loop_latest(loop, limit=new + 1)
    if len(rows) <= new:
        return None
    behind = rows[new]
    assert behind.receipt is not None and behind.receipt.settled_at is not None
    since = behind.receipt.settled_at - MARGIN
    return StreamRead(loop=loop, after=behind.sequence, since=since)


async def measure(url: str) -> dict[str, float]:
    """Each read's median time (ms) on the ledger at ``url``."""
    figures = {}
    async with await open_ledger(url, create=False) as ledger:
        await ledger.walk_chain()  # as a runner does at start
        loops = LoopActivities(ledger)
        for new in NEW:
            found = [await _cursor(ledger, f"loop-{i:03d}", new) for i in range(LOOPS)]
            reads = [r for r in found if r is not None]

            async def read(i: int, reads: list[StreamRead] = reads, new: int = new) -> object:
                page = await loops.read_after(reads[i % len(reads)])
                assert len(page.notes) == new, (len(page.notes), new)
                return page

            figures[f"stream read, {new} new"] = await median_ms(read)
    return figures


@asynccontextmanager
async def _sqlite(n: int) -> AsyncIterator[str]:
    with tempfile.TemporaryDirectory(prefix="landed-bench-tripwire-") as tmp:
        yield f"sqlite:///{Path(tmp) / 'ledger.db'}"


@asynccontextmanager
async def _postgres(n: int) -> AsyncIterator[str]:
    tag = uuid.uuid4().hex[:8]
    schema, role = f"landed_bench_tw_{tag}", f"landed_bench_tw_writer_{tag}"
    try:
        yield f"{PG_DSN}?schema={schema}&writer_role={role}"
    finally:
        async with await psycopg.AsyncConnection.connect(PG_DSN, autocommit=True) as conn:
            await conn.execute(
                sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema))
            )
            await conn.execute(sql.SQL("DROP ROLE IF EXISTS {}").format(sql.Identifier(role)))


async def _postgres_answers() -> bool:
    try:
        async with await psycopg.AsyncConnection.connect(PG_DSN, connect_timeout=3):
            return True
    except psycopg.Error as exc:
        print(f"tripwire reads, PostgreSQL: skipped, {PG_DSN} did not answer ({exc})")
        return False


async def run_backend(backend: str) -> bool:
    ledger = _sqlite if backend == "sqlite" else _postgres
    figures: dict[int, dict[str, float]] = {}
    for n in SIZES:
        async with ledger(n) as url:
            print(f"{backend}, {n:,} receipts:", flush=True)
            await populate(url, n)
            figures[n] = await measure(url)
    return report(backend, figures)


def report(backend: str, figures: dict[int, dict[str, float]]) -> bool:
    small, big = SIZES
    print(
        f"tripwire stream reads, {backend}, median ms per read: {small:,} receipts beside "
        f"{big:,}, target <= {TARGET:.1f}x",
        flush=True,
    )
    ok = True
    for name, base in figures[small].items():
        ratio = figures[big][name] / base
        ok &= ratio <= TARGET
        print(
            f"  {name:<24} {base:>8.3f} ms  {figures[big][name]:>8.3f} ms  ratio {ratio:5.2f}  "
            f"{'met' if ratio <= TARGET else 'MISSED'}",
            flush=True,
        )
    return ok


def main(argv: list[str] | None = None) -> int:
    """Run the chosen backends; exit 1 if a read grew past the target."""

    async def run() -> bool:
        ok = True
        for backend in BACKENDS:
            if backend == "postgres" and not await _postgres_answers():
                continue
            ok &= await run_backend(backend)
        return ok

    started = time.perf_counter()
    ok = asyncio.run(run())
    print(f"  ({time.perf_counter() - started:,.0f} s in all)")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
