"""What the confirmation read costs: latency per task and throughput, beside the flow without it.

Three flows of the same marks task on `landed dev` (pre-read, act, read back, settle): ``off``
(a runner with LANDED_RUNNER_CONFIRM_READS=false: no confirmation), ``read`` (confirmed with
durability.confirm_after 0: the second read's own cost) and ``default`` (confirmed after the
default quiet interval, 1 s). The runner setting is read when a runner starts, so each round
starts the stack twice (off, then on) and alternates; every figure is printed beside ``off``
from the same round as a ratio.

Latency: tasks one at a time (median and p90). Throughput: tasks/s with CONCURRENCY in flight
for WINDOW seconds (a waiting task holds no CPU, so the quiet interval lowers the rate only
through the tasks it keeps in flight), and the runner + verifier CPU per task.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import statistics
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from bench.temporal_throughput import _cpu_seconds, mark_spec, mark_stack

ROUNDS = int(os.environ.get("LANDED_BENCH_CONFIRM_ROUNDS", "2"))
SERIAL = int(os.environ.get("LANDED_BENCH_CONFIRM_SERIAL", "15"))
CONCURRENCY = int(os.environ.get("LANDED_BENCH_CONFIRM_CONCURRENCY", "50"))
WINDOW = float(os.environ.get("LANDED_BENCH_CONFIRM_SECONDS", "8"))


def _spec(task_id: str, confirm_after: float | None) -> dict[str, Any]:
    spec = mark_spec(task_id, True)
    if confirm_after is not None:
        spec["durability"] = {"confirm_after": confirm_after}
    return spec


async def _flow(client: Any, pids: dict[str, int], name: str, wait: float | None) -> dict[str, Any]:
    """One flow on a running stack: serial latencies, then the sustained rate and CPU."""
    tag = f"{name}-{uuid.uuid4().hex[:6]}"
    latencies = []
    for i in range(SERIAL):
        started = time.perf_counter()
        receipt = await client.run(_spec(f"{tag}-s{i}", wait))
        latencies.append(time.perf_counter() - started)
        assert receipt.verdict == "verified", receipt.landed
    loop = asyncio.get_running_loop()
    closes = loop.time() + WINDOW
    done = total = 0
    counter = iter(range(1 << 62))

    async def slot() -> None:
        nonlocal done, total
        while loop.time() < closes:
            receipt = await client.run(_spec(f"{tag}-c{next(counter)}", wait))
            assert receipt.verdict == "verified", receipt.landed
            total += 1  # the CPU is read once the last task ended: it counts them all
            done += loop.time() < closes

    cpu = {role: _cpu_seconds(pid) for role, pid in pids.items()}
    await asyncio.gather(*(slot() for _ in range(CONCURRENCY)))
    used = sum(_cpu_seconds(pid) - cpu[role] for role, pid in pids.items())
    return {
        "median": statistics.median(latencies),
        "p90": sorted(latencies)[int(0.9 * (len(latencies) - 1))],
        "rate": done / WINDOW,
        "cpu_ms": used * 1000 / max(total, 1),
    }


async def _stack_round(confirm: bool, flows: dict[str, float | None]) -> dict[str, dict[str, Any]]:
    home = Path(tempfile.mkdtemp(prefix="landed-bench-confirm-"))
    stack = mark_stack(home, {"LANDED_RUNNER_CONFIRM_READS": "true" if confirm else "false"})
    await stack.start()
    try:
        client = await stack.client()
        pids = {r: stack.roles[r].pid for r in ("runner", "verifier")}
        for i in range(5):  # warm the workers' imports and connections
            await client.run(_spec(f"warm-{uuid.uuid4().hex[:6]}-{i}", 0))
        return {name: await _flow(client, pids, name, wait) for name, wait in flows.items()}
    finally:
        await asyncio.to_thread(stack.stop)
        shutil.rmtree(home, ignore_errors=True)


async def _run() -> None:
    rounds: list[dict[str, dict[str, Any]]] = []
    for _ in range(ROUNDS):
        figures = await _stack_round(False, {"off": None})
        figures |= await _stack_round(True, {"read": 0.0, "default": None})
        rounds.append(figures)
    print(
        f"confirmation read on landed dev ({ROUNDS} rounds; latency over {SERIAL} tasks one at a "
        f"time; rate with {CONCURRENCY} in flight for {WINDOW:g} s; cpu = runner + verifier)"
    )
    for name, label in (
        ("off", "no confirmation (LANDED_RUNNER_CONFIRM_READS=false)"),
        ("read", "confirmed, confirm_after 0 (the read's own cost)"),
        ("default", "confirmed after the default 1 s"),
    ):
        med = statistics.median(r[name]["median"] for r in rounds)
        p90 = statistics.median(r[name]["p90"] for r in rounds)
        rate = statistics.median(r[name]["rate"] for r in rounds)
        cpu = statistics.median(r[name]["cpu_ms"] for r in rounds)
        lat_x = statistics.median(r[name]["median"] / r["off"]["median"] for r in rounds)
        rate_x = statistics.median(r[name]["rate"] / r["off"]["rate"] for r in rounds)
        added = statistics.median(r[name]["median"] - r["off"]["median"] for r in rounds)
        print(
            f"  {name:8s} {label:55s} latency {med * 1000:7.1f} ms (p90 {p90 * 1000:7.1f}) "
            f"+{added * 1000:6.1f} ms, {lat_x:.2f}x  rate {rate:6.1f} tasks/s {rate_x:.2f}x  "
            f"cpu {cpu:5.1f} ms/task"
        )


def main(argv: list[str] | None = None) -> int:
    asyncio.run(_run())
    return 0
