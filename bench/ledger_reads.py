"""Reads that do not grow with the ledger (issue 33): each at most 2x its time on 10,000 receipts
when the ledger holds 1,000,000, on SQLite and PostgreSQL.

Each read is timed on a ledger of SMALL receipts (the baseline, built in the same run) and on
one of N, both built through landed's own append path (``append_many``), tasks spread over
100 loops and 100 owners, settled a second apart. The ledgers are kept for the next run (a
ledger of 1,000,000 takes many minutes to build): SQLite's under bench/.data, PostgreSQL's in a
database of their own (landed_bench_reads, a schema each), so the tests' database is untouched.

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
one's rows/s and peak RSS beside the targets (>= 50,000 rows/s, <= 200 MB), then where a
row's time goes (bench._reads_per_row: the chain walk, the read and hash check, the row, its
output) beside the full pydantic Receipt those commands built per row before.

LANDED_BENCH_READS_N sets N (default 1,000,000); LANDED_BENCH_READS_BACKENDS picks the
backends (default "sqlite,postgres").
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from datetime import timedelta
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import psycopg
from psycopg import sql

from bench._reads_per_row import per_row
from bench.ledger_append import PG_DSN, receipts
from landed.activities.loops import LoopActivities
from landed.cli.board_read import filtered_rows
from landed.ledger.base import LedgerError
from landed.ledger.factory import open_ledger
from landed.loops.tripwire import CatchUp
from landed.receipts.model import Receipt

SMALL = 10_000
N = int(os.environ.get("LANDED_BENCH_READS_N", "1000000"))
BACKENDS = os.environ.get("LANDED_BENCH_READS_BACKENDS", "sqlite,postgres").split(",")
#: Where the SQLite ledgers are kept between runs, and the PostgreSQL database of the others.
CACHE = Path(__file__).parent / ".data"
PG_DB = "landed_bench_reads"
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


# Runs the command in a child of its own and writes that child's peak RSS (KB) to argv[1]. A
# child of the bench itself would report the bench's own peak: Linux keeps the larger of the
# parent's memory at fork and the command's own as the exec'd process's ru_maxrss.
_LAUNCH = """import os, sys
pid = os.fork()
if pid == 0:
    os.execv(sys.argv[2], sys.argv[2:])
_, status, usage = os.wait4(pid, 0)
with open(sys.argv[1], "w") as out:
    out.write(str(usage.ru_maxrss))
sys.exit(os.waitstatus_to_exitcode(status))
"""


def run_cli(args: list[str], n: int) -> tuple[float, float]:
    """(rows/s, peak RSS in MB) of one landed command over ``n`` tasks, output discarded."""
    exe = Path(sys.executable).with_name("landed")
    with (
        open(os.devnull, "wb") as sink,
        tempfile.TemporaryFile() as errors,
        tempfile.NamedTemporaryFile("r") as peak,
    ):
        start = time.perf_counter()
        # stderr to a file, not a pipe: a command that says much cannot block on it.
        launch = [sys.executable, "-c", _LAUNCH, peak.name, str(exe), *args]
        code = subprocess.run(launch, stdout=sink, stderr=errors, check=False).returncode
        took = time.perf_counter() - start
        errors.seek(0)
        err = errors.read().decode(errors="replace")
        rss = int(peak.read() or 0) / 1024
    if code != 0:
        # Said, and counted as missed; the other commands are still measured.
        print(f"  landed {args[0]} failed (exit {code}): {err[-300:]}")
        return 0.0, rss
    return n / took, rss


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


async def cached(url: str, n: int, drop: Callable[[], Awaitable[None]]) -> None:
    """The ledger at ``url`` holding the bench's ``n`` receipts: kept from an earlier run if it
    holds them all (a 1,000,000-receipt ledger takes many minutes to build), else built anew."""
    with contextlib.suppress(LedgerError):
        async with await open_ledger(url, create=False) as ledger:
            if await ledger.count() == n:
                print(f"  reusing the ledger of {n:,} receipts at {ledger.url}", flush=True)
                return
    await drop()
    await populate(url, n)


async def run_sqlite() -> bool:
    CACHE.mkdir(parents=True, exist_ok=True)
    urls = {n: f"sqlite:///{CACHE / f'reads-sqlite-{n}.db'}" for n in (SMALL, N)}
    figures = {}
    for n, url in urls.items():
        path = CACHE / f"reads-sqlite-{n}.db"

        async def drop(path: Path = path) -> None:
            for stale in (
                path,
                path.with_name(path.name + "-wal"),
                path.with_name(path.name + "-shm"),
            ):
                stale.unlink(missing_ok=True)

        await cached(url, n, drop)
        figures[n] = await measure(url, n)
    ok = report("SQLite", figures[SMALL], figures[N])
    ok &= streamed("SQLite", urls[N], N)
    await per_row(urls[N])
    return ok


async def run_postgres() -> bool:
    """The PostgreSQL ledgers live in a database of their own (PG_DB), one schema each, kept
    between runs like the SQLite files: the tests' database is not touched."""
    try:
        async with await psycopg.AsyncConnection.connect(PG_DSN, connect_timeout=3) as conn:
            await conn.set_autocommit(True)
            found = await conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (PG_DB,))
            if await found.fetchone() is None:
                await conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(PG_DB)))
    except psycopg.Error as exc:
        print(f"ledger reads, PostgreSQL: skipped, {PG_DSN} did not answer ({exc})")
        return True
    base = urlunsplit(urlsplit(PG_DSN)._replace(path=f"/{PG_DB}"))
    figures = {}
    ok = True
    for n in (SMALL, N):
        schema = f"reads_{n}"
        url = f"{base}?schema={schema}&writer_role=landed_bench_reads_writer"

        async def drop(schema: str = schema) -> None:
            async with await psycopg.AsyncConnection.connect(base, autocommit=True) as conn:
                await conn.execute(
                    sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema))
                )

        await cached(url, n, drop)
        figures[n] = await measure(url, n)
        if n == N:
            ok = streamed("PostgreSQL", url, N)
            await per_row(url)
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
