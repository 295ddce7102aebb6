"""What a tripwire costs a loop's tasks: the runner's CPU per task, with and without one.

One `landed dev` stack; the same marks task (pre-read, act, read back, settle) run in rounds
that alternate between ``plain`` (no loop: no tripwire) and ``loop`` (the task names a loop:
its settle step signals the loop's Tripwire, which the runner also runs). Each round runs
TASKS tasks with CONCURRENCY in flight; the runner's CPU per task is printed for both and the
ratio loop / plain (median of the rounds). Target: at most 1.05 (a tripwire adds <= 5%).
"""

from __future__ import annotations

import asyncio
import os
import shutil
import statistics
import tempfile
import uuid
from pathlib import Path
from typing import Any

from bench.temporal_throughput import _cpu_seconds, mark_spec, mark_stack

ROUNDS = int(os.environ.get("LANDED_BENCH_TRIPWIRE_ROUNDS", "4"))
TASKS = int(os.environ.get("LANDED_BENCH_TRIPWIRE_TASKS", "200"))
CONCURRENCY = int(os.environ.get("LANDED_BENCH_TRIPWIRE_CONCURRENCY", "20"))
TARGET = 1.05


async def _round(client: Any, pid: int, loop: str | None) -> float:
    """Runner CPU (ms) per task over TASKS tasks, CONCURRENCY in flight."""
    tag = uuid.uuid4().hex[:8]
    ids = iter(range(TASKS))

    async def slot() -> None:
        for i in ids:
            spec = mark_spec(f"tw-{tag}-{i}", True) | ({"loop": loop} if loop else {})
            receipt = await client.run(spec)
            assert receipt.verdict == "verified", receipt.landed

    before = _cpu_seconds(pid)
    await asyncio.gather(*(slot() for _ in range(CONCURRENCY)))
    # The tripwire's own workflow tasks follow the last settle by a few milliseconds.
    await asyncio.sleep(2.0)
    return (_cpu_seconds(pid) - before) * 1000 / TASKS


async def _run() -> int:
    from landed.loops.spec import LoopSpec

    home = Path(tempfile.mkdtemp(prefix="landed-bench-tripwire-"))
    stack = mark_stack(home, {})
    await stack.start()
    try:
        client = await stack.client()
        pid = stack.roles["runner"].pid
        name = f"bench-{uuid.uuid4().hex[:6]}"
        template = {k: v for k, v in mark_spec("x", True).items() if k != "task_id"}
        await client.create_loop(
            LoopSpec.model_validate({"name": name, "every": "PT15M", "task": template}),
            paused=True,
        )
        for i in range(10):  # warm the workers' imports and connections, both paths
            await client.run(mark_spec(f"warm-{uuid.uuid4().hex[:6]}-{i}", True))
            await client.run(mark_spec(f"warm-{uuid.uuid4().hex[:6]}-{i}", True) | {"loop": name})
        rounds = []
        for _ in range(ROUNDS):
            plain = await _round(client, pid, None)
            looped = await _round(client, pid, name)
            rounds.append((plain, looped))
    finally:
        await asyncio.to_thread(stack.stop)
        shutil.rmtree(home, ignore_errors=True)
    plain = statistics.median(p for p, _ in rounds)
    looped = statistics.median(q for _, q in rounds)
    ratio = statistics.median(q / p for p, q in rounds)
    print(
        f"tripwire on landed dev ({ROUNDS} rounds of {TASKS} tasks, {CONCURRENCY} in flight; "
        "runner CPU per task)"
    )
    print(f"  plain  no loop, no tripwire          {plain:6.2f} ms/task")
    print(f"  loop   the loop's tripwire signalled {looped:6.2f} ms/task  {ratio:.3f}x plain")
    print(f"  target at most {TARGET:.2f}x: {'met' if ratio <= TARGET else 'NOT met'}")
    return 0 if ratio <= TARGET else 1


def main(argv: list[str] | None = None) -> int:
    return asyncio.run(_run())
