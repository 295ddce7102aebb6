"""The kill switch's latencies (GOV-4) on `landed dev`, beside a baseline from the same run.

A stream of mark tasks is submitted (one every 50 ms) while ``landed pause`` is flipped; the
figures: how long the pause took to return (read back by a runner), the last act seen after it
returned (GOV-4 asks for none later than 5 s), and, once WAITING tasks wait at the switch, how
long a resume takes until the first and the last of them acted. The baseline is an unpaused
task's submit -> act on the same stack; an act is seen when its marks row appears.
"""

from __future__ import annotations

import asyncio
import shutil
import sqlite3
import statistics
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from bench.temporal_throughput import bench_db, mark_spec, mark_stack

WAITING = 10


def _marks(db: Path) -> set[str]:
    with sqlite3.connect(db, timeout=30) as conn:
        return {str(r[0]) for r in conn.execute("select task from marks")}


async def _seen(db: Path, tasks: set[str], timeout: float = 60) -> float:
    """Wall time when all ``tasks`` have a marks row (polled every 10 ms, bounded)."""
    until = time.time() + timeout
    while not tasks <= _marks(db):
        if time.time() > until:
            raise TimeoutError(f"{len(tasks - _marks(db))} tasks never acted")
        await asyncio.sleep(0.01)
    return time.time()


async def _run(home: Path) -> dict[str, Any]:
    from landed.temporal.fleet import flip

    stack = mark_stack(home, {})
    await stack.start()
    db = bench_db(home)
    try:
        client = await stack.client()
        tag = uuid.uuid4().hex[:6]
        base = []
        for i in range(5):
            t0 = time.time()
            await client.start(mark_spec(f"base-{tag}-{i}", True))
            base.append(await _seen(db, {f"base-{tag}-{i}"}) - t0)
        stream_ids: list[str] = []

        async def stream() -> None:
            for i in range(40):
                stream_ids.append(f"stream-{tag}-{i}")
                await client.start(mark_spec(stream_ids[-1], True))
                await asyncio.sleep(0.05)

        streaming = asyncio.ensure_future(stream())
        await asyncio.sleep(0.5)
        asked = time.time()
        paused = await flip(
            client.temporal, paused=True, by="bench", runner_queue=client.task_queue
        )
        returned = time.time()
        await streaming
        waiting = {f"wait-{tag}-{i}" for i in range(WAITING)}
        for task_id in sorted(waiting):
            await client.start(mark_spec(task_id, True))
        await asyncio.sleep(6)
        acted = _marks(db)
        assert not waiting & acted, "a task acted while the fleet was paused"
        resumed_at = time.time()
        await flip(client.temporal, paused=False, by="bench", runner_queue=client.task_queue)
        first = min([await _seen(db, {t}) for t in sorted(waiting)])
        last = await _seen(db, waiting | set(stream_ids))
        return {
            "confirmed": paused.confirmed,
            "base": statistics.median(base),
            "pause_return": returned - asked,
            "unacted_stream": len(set(stream_ids) - acted),
            "resume_first": first - resumed_at,
            "resume_all": last - resumed_at,
        }
    finally:
        await asyncio.to_thread(stack.stop)


def main(argv: list[str] | None = None) -> int:
    home = Path(tempfile.mkdtemp(prefix="landed-bench-pause-"))
    try:
        r = asyncio.run(_run(home))
    finally:
        shutil.rmtree(home, ignore_errors=True)
    base = r["base"]
    print(f"baseline: unpaused submit -> act          {base * 1000:8.1f} ms")
    print(f"pause asked -> returned (read back)       {r['pause_return'] * 1000:8.1f} ms")
    print("tasks submitted after the pause that acted        0 (asserted: a row fails the run)")
    print(f"stream tasks left waiting by the pause    {r['unacted_stream']:8d} of 40")
    first, every = r["resume_first"], r["resume_all"]
    print(
        f"resume -> first waiting task acted        {first * 1000:8.1f} ms  ({first / base:.2f}x)"
    )
    print(
        f"resume -> all {WAITING + r['unacted_stream']:3d} waiting tasks acted     "
        f"{every * 1000:8.1f} ms  ({every / base:.2f}x)"
    )
    return 0 if r["confirmed"] and r["pause_return"] < 5 else 1
