"""`landed ledger verify` over a million receipts on SQLite and PostgreSQL, beside a bare scan.

Target (issue 22): >= 100,000 receipts/s checked, each row's body re-hashed and its chain link
recomputed, every signed head's signature verified. The baseline is a bare scan of the same
rows and columns from the same store in the same run (no hashing, no checks): the ratio is what
verifying costs over only reading.

LANDED_BENCH_VERIFY_N sets the number of receipts (default 1,000,000).
"""

from __future__ import annotations

import asyncio
import os
import sqlite3
import sys
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path

import psycopg
from psycopg import sql

from bench.ledger_append import PG_DSN, receipts
from landed.ledger.audit import ChainReport, audit
from landed.ledger.chain import HeadSigner
from landed.ledger.factory import open_ledger
from landed.signing import KeyPair

TARGET = 100_000.0
N = int(os.environ.get("LANDED_BENCH_VERIFY_N", "1000000"))
ROUNDS = 2
HEAD_EVERY = 1000
_CHUNK = 1000
_COLUMNS = "sequence, chain_pos, chain_link, body_sha256, body"


async def populate(url: str, key: KeyPair) -> None:
    """N receipts through landed's own append path, signed every HEAD_EVERY appends."""
    template = receipts(1, "verify")[0]
    started = time.perf_counter()
    async with await open_ledger(url, signer=HeadSigner(key, every=HEAD_EVERY)) as ledger:
        for start in range(0, N, _CHUNK):
            batch = [
                template.model_copy(update={"task_id": f"verify-{i:07d}"})
                for i in range(start, min(start + _CHUNK, N))
            ]
            await ledger.append_many(batch)
    print(f"  populated {N:,} receipts in {time.perf_counter() - started:,.1f} s", flush=True)


async def verify_rate(url: str, key: KeyPair) -> tuple[float, ChainReport]:
    async with await open_ledger(url, create=False) as ledger:
        start = time.perf_counter()
        report = await audit(ledger, {key.key_id: key.public_key}, max_unsigned=0)
        rate = report.rows / (time.perf_counter() - start)
    if report.tampered or report.rows != N:
        raise SystemExit(f"the benchmark ledger did not verify clean: {report.as_dict()}")
    return rate, report


def sqlite_scan(path: Path) -> float:
    conn = sqlite3.connect(path)
    start = time.perf_counter()
    cur = conn.execute(f"SELECT {_COLUMNS} FROM landed_receipts ORDER BY sequence")
    rows = 0
    while page := cur.fetchmany(5000):
        rows += len(page)
    rate = rows / (time.perf_counter() - start)
    conn.close()
    return rate


async def postgres_scan(schema: str) -> float:
    table = sql.Identifier(schema, "landed_receipts")
    async with await psycopg.AsyncConnection.connect(PG_DSN) as conn:
        start = time.perf_counter()
        rows = 0
        async with conn.transaction(), conn.cursor(name="bench_scan") as cur:
            await cur.execute(
                sql.SQL(f"SELECT {_COLUMNS} FROM {{}} ORDER BY sequence").format(table)
            )
            while page := await cur.fetchmany(5000):
                rows += len(page)
        return rows / (time.perf_counter() - start)


async def best(fn: Callable[[], Awaitable[float]]) -> float:
    return max([await fn() for _ in range(ROUNDS)])


def report(backend: str, rate: float, baseline: float, checked: ChainReport) -> bool:
    met = rate >= TARGET
    print(
        f"ledger verify, {backend}, {checked.rows:,} receipts, {checked.signed_heads:,} signed "
        f"heads, best of {ROUNDS}:\n"
        f"  baseline (bare scan of the same rows)  {baseline:>10,.0f} rows/s\n"
        f"  landed ledger verify                   {rate:>10,.0f} receipts/s  ratio "
        f"{rate / baseline:.2f}  target >= {TARGET:,.0f}/s {'met' if met else 'MISSED'}",
        flush=True,
    )
    return met


async def run_sqlite() -> bool:
    key = KeyPair.generate()
    with tempfile.TemporaryDirectory(prefix="landed-bench-verify-") as tmp:
        path = Path(tmp) / "ledger.db"
        url = f"sqlite:///{path}"
        await populate(url, key)
        checked: list[ChainReport] = []

        async def one() -> float:
            rate, rep = await verify_rate(url, key)
            checked.append(rep)
            return rate

        rate = await best(one)

        async def scan() -> float:
            return await asyncio.to_thread(sqlite_scan, path)

        baseline = await best(scan)
        return report("SQLite", rate, baseline, checked[-1])


async def run_postgres() -> bool:
    try:
        async with await psycopg.AsyncConnection.connect(PG_DSN, connect_timeout=3):
            pass
    except psycopg.Error as exc:
        print(f"ledger verify, PostgreSQL: skipped, {PG_DSN} did not answer ({exc})")
        return True
    key, tag = KeyPair.generate(), uuid.uuid4().hex[:8]
    schema, role = f"landed_bench_v_{tag}", f"landed_bench_v_writer_{tag}"
    url = f"{PG_DSN}?schema={schema}&writer_role={role}"
    try:
        await populate(url, key)
        checked: list[ChainReport] = []

        async def one() -> float:
            rate, rep = await verify_rate(url, key)
            checked.append(rep)
            return rate

        rate = await best(one)
        baseline = await best(lambda: postgres_scan(schema))
        return report("PostgreSQL", rate, baseline, checked[-1])
    finally:
        async with await psycopg.AsyncConnection.connect(PG_DSN, autocommit=True) as conn:
            await conn.execute(
                sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema))
            )
            await conn.execute(sql.SQL("DROP ROLE IF EXISTS {}").format(sql.Identifier(role)))


def main(argv: list[str] | None = None) -> int:
    """Run both backends; exit 1 if either missed the target."""

    async def both() -> bool:
        return (await run_sqlite()) & (await run_postgres())

    return 0 if asyncio.run(both()) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
