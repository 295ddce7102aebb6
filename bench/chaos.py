"""Chaos: tasks through the three roles as processes on ``landed dev``'s server while they crash.

``python -m bench chaos`` runs LANDED_BENCH_CHAOS_TASKS (1,000) tasks with at most
LANDED_BENCH_CHAOS_CONCURRENCY (100) in flight, twice per ledger: once with no fault (the
baseline) and once while the actor is SIGKILLed 20 times, the verifier 10 times and the runner
5 times at seeded random moments (LANDED_BENCH_CHAOS_SEED, printed) and the server is restarted
once on its database file. SQLite first, then PostgreSQL (127.0.0.1:5432, LANDED_BENCH_CHAOS_PG).

Per run it prints: settled, lost, duplicate side effects (a task whose act wrote twice),
verified without the outcome, settled twice (more than one ledger row), and the wall time; the
fault run's wall time is also given against the no-fault run of the same ledger. Targets: 0 in
every loss column, and a fault run at most 2.5x the no-fault one. Everything binds to loopback.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import sqlite3
import tempfile
import time
import uuid
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from bench._chaos_faults import Fault, inject, schedule
from bench.temporal_throughput import bench_db, mark_spec, mark_stack

N = int(os.environ.get("LANDED_BENCH_CHAOS_TASKS", "1000"))
CONCURRENCY = int(os.environ.get("LANDED_BENCH_CHAOS_CONCURRENCY", "100"))
PG = os.environ.get("LANDED_BENCH_CHAOS_PG", "postgresql://postgres@127.0.0.1:5432/test")
TARGET_RATIO = 2.5
# A run that has not settled by then has lost tasks: the bench stops and says so.
RUN_LIMIT_S = float(os.environ.get("LANDED_BENCH_CHAOS_LIMIT_S", "1200"))
REPO = Path(__file__).resolve().parent.parent


@dataclass
class Tally:
    tasks: int
    settled: int
    lost: int
    duplicate_side_effects: int
    verified_without_outcome: int
    settled_twice: int
    wall_s: float
    faults_applied: int = 0

    def losses(self) -> int:
        return (
            self.lost
            + self.duplicate_side_effects
            + self.verified_without_outcome
            + self.settled_twice
        )


def _spec(task_id: str, rng: random.Random) -> dict[str, Any]:
    """The throughput bench's task (one mark row, read back), with an act that pauses before
    and after its write so that a kill lands in either."""
    spec = mark_spec(task_id, True)
    spec["act"] = {
        "name": "bench.chaos_mark",
        "input": {"before_s": round(rng.uniform(0, 0.4), 3), "after_s": 0.1},
    }
    spec["timeouts"] = {"act_heartbeat": 5, "verify_heartbeat": 5}
    return spec


def _stack(home: Path, ledger_url: str | None) -> Any:
    return mark_stack(home, {"LANDED_RUNNER_LEDGER_URL": ledger_url} if ledger_url else {})


async def _run_tasks(stack: Any, ids: list[str], rng: random.Random) -> dict[str, str]:
    """Start every task (CONCURRENCY at once) and wait for its verdict; a task whose wait
    failed is reported by the error's name, and read back from the ledger afterwards."""
    client = await stack.client()
    slots = asyncio.Semaphore(CONCURRENCY)
    outcome: dict[str, str] = {}

    async def one(task_id: str) -> None:
        async with slots:
            spec = _spec(task_id, rng)
            for _ in range(60):  # starting needs the server: wait out its restart
                try:
                    receipt = await client.run(spec)
                    outcome[task_id] = str(receipt.verdict)
                    return
                except Exception as exc:  # counted below from the ledger, never hidden
                    outcome[task_id] = f"error: {type(exc).__name__}"
                    await asyncio.sleep(1)

    await asyncio.wait_for(asyncio.gather(*(one(i) for i in ids)), RUN_LIMIT_S)
    return outcome


async def _tally(stack: Any, ids: list[str], wall_s: float) -> Tally:
    from landed.ledger.factory import open_ledger

    with sqlite3.connect(bench_db(stack.home.parent)) as conn:
        marks = dict(conn.execute("select task, count(*) from marks group by task").fetchall())
    settled = twice = unproven = 0
    async with await open_ledger(stack.roles["runner"].ready["ledger"], create=False) as ledger:
        for task_id in ids:
            stored = await ledger.get(task_id)
            settled += bool(stored)
            twice += len(stored) > 1
            unproven += any(r.verdict == "verified" for r in stored) and not marks.get(task_id)
    return Tally(
        tasks=len(ids),
        settled=settled,
        lost=len(ids) - settled,
        duplicate_side_effects=sum(1 for t in ids if marks.get(t, 0) > 1),
        verified_without_outcome=unproven,
        settled_twice=twice,
        wall_s=round(wall_s, 1),
    )


async def _one_run(ledger_url: str | None, faults: list[Fault] | None, seed: int) -> Tally:
    rng = random.Random(seed)
    home = Path(tempfile.mkdtemp(prefix="landed-chaos-"))
    stack = _stack(home, ledger_url)
    await stack.start()
    try:
        ids = [f"chaos-{uuid.uuid4().hex[:8]}-{i}" for i in range(N)]
        started = time.monotonic()
        applied: list[Fault] = []
        injecting = asyncio.ensure_future(inject(stack, faults or [], started, applied))
        try:
            await _run_tasks(stack, ids, rng)
        finally:
            injecting.cancel()
            await asyncio.gather(injecting, return_exceptions=True)
        wall = time.monotonic() - started
        if faults:
            last = f", the last at {applied[-1].at_s:.1f}s" if applied else ""
            print(f"  applied {len(applied)} of {len(faults)} faults before the run ended{last}")
        tally = await _tally(stack, ids, wall)
        tally.faults_applied = len(applied)
        return tally
    finally:
        stack.stop()


def _pg_url() -> str:
    return f"{PG}?schema=landed_chaos_{uuid.uuid4().hex[:8]}"


async def _ledger(name: str, ledger_url: Callable[[], str | None], seed: int) -> bool:
    calm = await _one_run(ledger_url(), None, seed)
    print(f"{name:10} no faults  {json.dumps(asdict(calm))}", flush=True)
    plan = schedule(random.Random(seed), duration_s=calm.wall_s)
    print(f"{name:10} faults     {', '.join(f.describe() for f in plan)}", flush=True)
    storm = await _one_run(ledger_url(), plan, seed)
    ratio = storm.wall_s / calm.wall_s if calm.wall_s else float("inf")
    print(f"{name:10} with faults {json.dumps(asdict(storm))}", flush=True)
    # A run that ended before every fault landed measured less chaos than it names.
    every_fault = storm.faults_applied == len(plan)
    ok = storm.losses() == 0 and calm.losses() == 0 and ratio <= TARGET_RATIO and every_fault
    print(
        f"{name:10} wall time {storm.wall_s:.1f} s against {calm.wall_s:.1f} s without faults: "
        f"{ratio:.2f}x (target <= {TARGET_RATIO}x); loss columns "
        f"{'all 0' if storm.losses() == 0 else 'NOT 0'}; {storm.faults_applied} of {len(plan)} "
        f"faults applied -> {'met' if ok else 'MISSED'}",
        flush=True,
    )
    return ok


def main(argv: list[str] | None = None) -> int:
    seed = int(
        os.environ.get("LANDED_BENCH_CHAOS_SEED") or random.SystemRandom().randrange(1 << 30)
    )
    print(f"chaos: {N} tasks, {CONCURRENCY} in flight, seed {seed}", flush=True)
    ok = asyncio.run(_ledger("sqlite", lambda: None, seed))
    ok = asyncio.run(_ledger("postgresql", _pg_url, seed)) and ok
    return 0 if ok else 1
