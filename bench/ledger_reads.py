"""Reads that do not grow with the ledger (issue 33): each at most 2x its time on 10,000 receipts
when the ledger holds 1,000,000, on SQLite and PostgreSQL.

Each read is timed on a ledger of SMALL receipts (the baseline, built in the same run) and on
one of N, both built through landed's own append path (``append_many``), tasks spread over
100 loops and 100 owners, settled a second apart:

- catch-up: the tripwire's catch-up activity (a loop's newest 100 settlements)
- silence read: the same activity with ``since`` (the read before a silence trip)
- client.receipt: the runner's ledger lookup it ends in (``Ledger.latest``)
- latest-receipt lookup: the runner's claim-step read (``Ledger.claim``, record=False)
- board filtered: ``landed board``'s read (landed.cli.board_read) with --loop, --owner and
  --since, each selecting 100 tasks on either ledger (a loop and an owner of 100 tasks, the
  last 100 settled): the work of an indexed read grows with what it shows, not the ledger

Each figure is the median of ROUNDS calls on the same open ledger after one call (whose chain
walk is done at open by a runner: ``Ledger.walk_chain``, timed apart). The old catch-up (every
task's latest receipt, filtered by loop in Python) is timed on the small ledger for comparison.

On N receipts (one task each) it also runs `landed board --json`, `landed board` (the table)
and `landed receipts export --latest` as the user does, output to /dev/null, and prints each
one's rows/s and peak RSS beside the targets (>= 50,000 rows/s, <= 200 MB).

LANDED_BENCH_READS_N sets N (default 1,000,000); LANDED_BENCH_READS_BACKENDS picks the
backends (default "sqlite,postgres").
"""

from __future__ import annotations

import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable
from datetime import timedelta
from pathlib import Path

import psycopg
from psycopg import sql

from bench.ledger_append import PG_DSN, receipts
from landed.activities.loops import LoopActivities
from landed.cli.board_read import filtered_rows
from landed.ledger.factory import open_ledger
from landed.loops.tripwire import CatchUp
from landed.receipts.model import Receipt

SMALL = 10_000
N = int(os.environ.get("LANDED_BENCH_READS_N", "1000000"))
BACKENDS = os.environ.get("LANDED_BENCH_READS_BACKENDS", "sqlite,postgres").split(",")
TARGET = 2.0
ROUNDS = 200
LOOPS = 100
OWNERS = 100
_CHUNK = 2000

_TEMPLATE = receipts(1, "reads")[0]
_AT = _TEMPLATE.settled_at


#: A loop and an owner of FEW tasks on either ledger (spread through it), for the board filtered.
FEW = 100


def _receipt(i: int, n: int) -> Receipt:
    assert _TEMPLATE.landed is not None and _AT is not None
    few = i % (n // FEW) == 1
    loop = "loop-few" if few else f"loop-{i % LOOPS:03d}"
    return _TEMPLATE.model_copy(
        update={
            "task_id": f"reads-{i:07d}",
            "owner": "owner-few" if few else f"owner-{i % OWNERS:03d}",
            "settled_at": _AT + timedelta(seconds=i),
            "landed": _TEMPLATE.landed.model_copy(update={"loop": loop}),
        }
    )


async def populate(url: str, n: int) -> None:
    started = time.perf_counter()
    async with await open_ledger(url) as ledger:
        for start in range(0, n, _CHUNK):
            await ledger.append_many([_receipt(i, n) for i in range(start, min(start + _CHUNK, n))])
    took = time.perf_counter() - started
    print(f"  populated {n:,} receipts in {took:,.1f} s ({n / took:,.0f}/s)", flush=True)


async def median_ms(call: Callable[[int], Awaitable[object]]) -> float:
    await call(0)
    times = []
    for i in range(1, ROUNDS + 1):
        start = time.perf_counter()
        await call(i)
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1000


async def measure(url: str, n: int) -> dict[str, float]:
    """Each read's median time (ms) on the ledger at ``url`` holding ``n`` receipts."""
    assert _AT is not None
    figures: dict[str, float] = {}
    async with await open_ledger(url, create=False) as ledger:
        start = time.perf_counter()
        await ledger.walk_chain()
        print(f"  chain walk at open ({n:,} rows): {time.perf_counter() - start:,.2f} s")
        loops = LoopActivities(ledger)
        recent = _AT + timedelta(seconds=n - 50 * LOOPS)

        def task(i: int) -> str:
            return f"reads-{(i * 7919) % n:07d}"

        async def catch_up(i: int) -> object:
            return await loops.catch_up(CatchUp(loop=f"loop-{i % LOOPS:03d}"))

        async def silence(i: int) -> object:
            return await loops.catch_up(CatchUp(loop=f"loop-{i % LOOPS:03d}", since=recent))

        async def receipt(i: int) -> object:
            found = await ledger.latest(task(i))
            assert found is not None
            return found

        async def lookup(i: int) -> object:
            found, _ = await ledger.claim(task(i), "bench-run", 1, "digest", record=False)
            assert found is not None
            return found

        last = _AT + timedelta(seconds=n - FEW - 1)

        async def board_loop(i: int) -> object:
            rows = await filtered_rows(ledger, owner=None, loop="loop-few", since=None)
            assert len(rows) == FEW and all(holds for *_, holds in rows), len(rows)
            return rows

        async def board_owner(i: int) -> object:
            rows = await filtered_rows(ledger, owner="owner-few", loop=None, since=None)
            assert len(rows) == FEW, len(rows)
            return rows

        async def board_since(i: int) -> object:
            rows = await filtered_rows(ledger, owner=None, loop=None, since=last)
            assert len(rows) == FEW, len(rows)
            return rows

        reads: dict[str, Callable[[int], Awaitable[object]]] = {
            "catch-up (newest 100 of a loop)": catch_up,
            "silence read (since armed)": silence,
            "client.receipt (ledger lookup)": receipt,
            "latest-receipt lookup (claim)": lookup,
            "board --loop (100 tasks)": board_loop,
            "board --owner (100 tasks)": board_owner,
            "board --since (100 tasks)": board_since,
        }
        for name, call in reads.items():
            figures[name] = await median_ms(call)
        if n == SMALL:

            async def old(i: int) -> object:
                board = await ledger.board()
                loop = f"loop-{i % LOOPS:03d}"
                mine = [r for r in board if r.landed is not None and r.landed.loop == loop]
                return mine[-100:]

            start = time.perf_counter()
            await old(0)
            figures["old catch-up (whole board, in Python)"] = (time.perf_counter() - start) * 1e3
    return figures


STREAM_RATE = 50_000.0
STREAM_RSS_MB = 200.0


def run_cli(args: list[str], n: int) -> tuple[float, float]:
    """(rows/s, peak RSS in MB) of one landed command over ``n`` tasks, output discarded."""
    exe = Path(sys.executable).with_name("landed")
    start = time.perf_counter()
    with open(os.devnull, "wb") as sink, tempfile.TemporaryFile() as errors:
        # stderr to a file, not a pipe: a command that says much cannot block on it.
        proc = subprocess.Popen([str(exe), *args], stdout=sink, stderr=errors)
        _, status, usage = os.wait4(proc.pid, 0)
        took = time.perf_counter() - start
        errors.seek(0)
        err = errors.read().decode(errors="replace")
    code = os.waitstatus_to_exitcode(status)
    if code != 0:
        # Said, and counted as missed; the other commands are still measured.
        print(f"  landed {args[0]} failed (exit {code}): {err[-300:]}")
        return 0.0, usage.ru_maxrss / 1024
    return n / took, usage.ru_maxrss / 1024


def streamed(backend: str, url: str, n: int) -> bool:
    ok = True
    print(
        f"streamed reads, {backend}, {n:,} tasks, targets >= {STREAM_RATE:,.0f} rows/s and "
        f"<= {STREAM_RSS_MB:.0f} MB peak",
        flush=True,
    )
    for name, args in (
        ("landed board --json", ["board", "--ledger", url, "--json"]),
        ("landed board (table)", ["board", "--ledger", url]),
        ("landed receipts export --latest", ["receipts", "export", "--ledger", url, "--latest"]),
    ):
        rate, rss = run_cli(args, n)
        met = rate >= STREAM_RATE and rss <= STREAM_RSS_MB
        ok &= met
        print(
            f"  {name:<34} {rate:>10,.0f} rows/s  {rss:>7,.0f} MB peak  "
            f"{'met' if met else 'MISSED'}",
            flush=True,
        )
    return ok


def report(backend: str, small: dict[str, float], big: dict[str, float]) -> bool:
    ok = True
    print(
        f"ledger reads, {backend}, median of {ROUNDS} calls: {SMALL:,} receipts (baseline) and "
        f"{N:,} receipts, target <= {TARGET:.1f}x",
        flush=True,
    )
    for name, base in small.items():
        if name not in big:
            print(f"  {name:<40} {base:>9.2f} ms  (the read the catch-up replaces; not run at N)")
            continue
        ratio = big[name] / base
        met = ratio <= TARGET
        ok &= met
        print(
            f"  {name:<40} {base:>9.3f} ms  {big[name]:>9.3f} ms  ratio {ratio:5.2f}"
            f"  {'met' if met else 'MISSED'}",
            flush=True,
        )
    return ok


async def run_sqlite() -> bool:
    with tempfile.TemporaryDirectory(prefix="landed-bench-reads-") as tmp:
        urls = {n: f"sqlite:///{Path(tmp) / f'ledger-{n}.db'}" for n in (SMALL, N)}
        figures = {}
        for n, url in urls.items():
            await populate(url, n)
            figures[n] = await measure(url, n)
        ok = report("SQLite", figures[SMALL], figures[N])
        return streamed("SQLite", urls[N], N) and ok


async def run_postgres() -> bool:
    try:
        async with await psycopg.AsyncConnection.connect(PG_DSN, connect_timeout=3):
            pass
    except psycopg.Error as exc:
        print(f"ledger reads, PostgreSQL: skipped, {PG_DSN} did not answer ({exc})")
        return True
    figures = {}
    ok = True
    for n in (SMALL, N):
        tag = uuid.uuid4().hex[:8]
        schema, role = f"landed_bench_r_{tag}", f"landed_bench_r_writer_{tag}"
        url = f"{PG_DSN}?schema={schema}&writer_role={role}"
        try:
            await populate(url, n)
            figures[n] = await measure(url, n)
            if n == N:
                ok = streamed("PostgreSQL", url, N)
        finally:
            async with await psycopg.AsyncConnection.connect(PG_DSN, autocommit=True) as conn:
                await conn.execute(
                    sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema))
                )
                await conn.execute(sql.SQL("DROP ROLE IF EXISTS {}").format(sql.Identifier(role)))
    return report("PostgreSQL", figures[SMALL], figures[N]) and ok


def main(argv: list[str] | None = None) -> int:
    """Run the chosen backends; exit 1 if any read missed the target."""

    async def run() -> bool:
        ok = True
        if "sqlite" in BACKENDS:
            ok &= await run_sqlite()
        if "postgres" in BACKENDS:
            ok &= await run_postgres()
        return ok

    return 0 if asyncio.run(run()) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
