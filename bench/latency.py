"""Latency of one task, from ``client.start`` to its settled receipt: p50/p90/p99 for tasks
run one at a time on an idle ``landed dev`` and five at a time, for the act alone, the floor
(act + one read), the floor with the two local steps AgentTask takes, the Temporal floor with
exactly each landed flow's steps (``bench._step_floors``), and landed's lean and default flows
with the confirmation interval at 0 and at its default.

The floors run on their own workflow worker (``temporal_throughput --serve-baseline``) beside
the same stack, in the same run, so each flow's figure stands beside its floor's.
Target: each landed flow's p50 at interval 0 at most 1.15x its own same-step floor's.
"""

from __future__ import annotations

import asyncio
import os
import statistics
import time
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

from bench.temporal_throughput import BASELINE_QUEUE, bench_stack, mark_spec

ONE_AT_A_TIME = int(os.environ.get("LANDED_BENCH_LATENCY_TASKS", "30"))
IN_FLIGHT = 5
TARGET = 1.15

One = Callable[[str], Awaitable[None]]
#: Each landed flow's Temporal floor with exactly its steps.
FLOOR_OF = {"lean": "lean's steps", "default": "default's steps"}


def _percentiles(seconds: list[float]) -> tuple[float, float, float]:
    cuts = statistics.quantiles(seconds, n=100, method="inclusive")
    return cuts[49], cuts[89], cuts[98]


async def _latencies(one: One, prefix: str, n: int, in_flight: int) -> list[float]:
    gate = asyncio.Semaphore(in_flight)
    out: list[float] = []

    async def timed(i: int) -> None:
        async with gate:
            started = time.perf_counter()
            await one(f"{prefix}-{i}")
            out.append(time.perf_counter() - started)

    await asyncio.gather(*(timed(i) for i in range(n)))
    return out


def _flows(client: Any, temporal: Any) -> dict[str, One]:
    from landed.task.spec import TaskSpec
    from landed.task.start import start_search_attributes
    from landed.temporal.settings import DEFAULT_ACTOR_QUEUE, DEFAULT_VERIFIER_QUEUE

    memo = {"actor_task_queue": DEFAULT_ACTOR_QUEUE, "verifier_task_queue": DEFAULT_VERIFIER_QUEUE}

    def plain(workflow: str) -> One:
        async def one(task_id: str) -> None:
            spec = TaskSpec.model_validate(mark_spec(task_id, False))
            ok = await temporal.execute_workflow(
                workflow,
                spec,
                id=task_id,
                task_queue=BASELINE_QUEUE,
                memo=memo,
                # Started searchable, as landed.Client starts a task (the same-step floors).
                search_attributes=start_search_attributes(spec),
            )
            if not ok:
                raise RuntimeError(f"{workflow} {task_id} was not read back as pass")

        return one

    def landed(pre_read: bool, confirm: str | None) -> One:
        async def one(task_id: str) -> None:
            spec = mark_spec(task_id, pre_read)
            if confirm is not None:
                spec["durability"] = {"confirm_after": confirm}
            receipt = await client.run(spec)
            if receipt.verdict != "verified":
                raise RuntimeError(f"{task_id} settled {receipt.verdict}, not verified")

        return one

    return {
        "act alone": plain("BenchActOnly"),
        "floor": plain("BenchActThenRead"),
        "floor+2": plain("BenchActThenReadWithLocalSteps"),
        "lean's steps": plain("BenchLeanSteps"),
        "default's steps": plain("BenchDefaultSteps"),
        "lean, interval 0": landed(False, "PT0S"),
        "default, interval 0": landed(True, "PT0S"),
        "lean, default interval": landed(False, None),
        "default, default interval": landed(True, None),
    }


async def _run() -> bool:
    async with bench_stack() as (_, client, _):
        return await _report(_flows(client, client.temporal))


async def _report(flows: dict[str, One]) -> bool:
    tag = uuid.uuid4().hex[:6]
    for k, one in enumerate(flows.values()):  # warm each path: first-use costs are not latency
        await _latencies(one, f"warm-{tag}-{k}", 3, 1)
    print(
        f"latency from client.start to the settled receipt ({ONE_AT_A_TIME} tasks one at a "
        f"time, then {ONE_AT_A_TIME} with {IN_FLIGHT} in flight), seconds p50 / p90 / p99"
    )
    p50: dict[tuple[str, int], float] = {}
    for in_flight in (1, IN_FLIGHT):
        cuts = {
            name: _percentiles(
                await _latencies(one, f"lat-{tag}-{in_flight}-{k}", ONE_AT_A_TIME, in_flight)
            )
            for k, (name, one) in enumerate(flows.items())
        }
        for name, (q50, q90, q99) in cuts.items():
            p50[name, in_flight] = q50
            ratio = q50 / cuts["floor+2"][0]
            own = FLOOR_OF.get(name.split(",")[0])
            beside = f"   p50 {q50 / cuts[own][0]:4.2f}x {own}" if own else ""
            print(
                f"  {in_flight} in flight  {name:<26} {q50:6.3f} / {q90:6.3f} / {q99:6.3f}"
                f"   p50 {ratio:4.2f}x floor+2{beside}",
                flush=True,
            )
    met = True
    for name in ("lean, interval 0", "default, interval 0"):
        own = FLOOR_OF[name.split(",")[0]]
        for in_flight in (1, IN_FLIGHT):
            ratio = p50[name, in_flight] / p50[own, in_flight]
            ok = ratio <= TARGET
            met = met and ok
            verdict = "met" if ok else "NOT met"
            print(
                f"  target    {name}, {in_flight} in flight: p50 {ratio:.2f}x {own} <= "
                f"{TARGET}x: {verdict}"
            )
    return met


def main(argv: list[str] | None = None) -> int:
    return 0 if asyncio.run(_run()) else 1
