"""What the governance gates cost on `landed dev`: the consent read before contact, and the
approval gate's decision (the approve Update's round trip, then approve -> settled), each beside
the same marks task without gates, one task at a time, from the same stack.

Figures: median latency (and p90) over SERIAL tasks per flow, as a ratio to ``plain``.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import sqlite3
import statistics
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from bench.temporal_throughput import bench_db, mark_spec, mark_stack
from landed.cli.demo.approval import APPROVER, make_approver

SERIAL = int(os.environ.get("LANDED_BENCH_GATES_SERIAL", "15"))


def _spec(task_id: str, flow: str) -> dict[str, Any]:
    spec = mark_spec(task_id, True)
    if flow == "consent":
        spec["contacts"] = {"kind": "message", "recipient": "ann", "consent_source": "bench-db"}
    if flow == "approval":
        spec["irreversible"] = "send"
    return spec


async def _one(client: Any, task_id: str, flow: str, key: Path) -> tuple[float, float]:
    """(seconds to settle, seconds of the approve Update; 0 without a gate)."""
    if flow != "approval":
        started = time.perf_counter()
        receipt = await client.run(_spec(task_id, flow))
        assert receipt.verdict == "verified", receipt.landed
        return time.perf_counter() - started, 0.0
    handle = await client.start(_spec(task_id, flow))
    for _ in range(600):
        if (await handle.progress()).rung == "held":
            break
        await asyncio.sleep(0.05)
    started = time.perf_counter()
    await handle.approve(APPROVER, key=key)  # signed: the Update's validator checks it
    decided = time.perf_counter() - started
    receipt = await handle.result()
    assert receipt.verdict == "verified", receipt.landed
    return time.perf_counter() - started, decided


async def _run() -> None:
    home = Path(tempfile.mkdtemp(prefix="landed-bench-gates-"))
    key = make_approver(home / ".landed")  # the stack's runner trusts its public half
    stack = mark_stack(home, {})
    with sqlite3.connect(bench_db(home)) as conn:
        conn.execute("create table do_not_contact (recipient text, channel text)")
        conn.execute("create table contact_consent (recipient text, channel text)")
        conn.execute("insert into contact_consent values ('ann', '*')")
    await stack.start()
    try:
        client = await stack.client()
        tag = uuid.uuid4().hex[:6]
        for i in range(5):  # warm the workers' imports and connections
            await _one(client, f"warm-{tag}-{i}", "consent", key)
        figures: dict[str, list[tuple[float, float]]] = {"plain": [], "consent": [], "approval": []}
        for i in range(SERIAL):  # interleaved, so drift hits every flow alike
            for flow, got in figures.items():
                got.append(await _one(client, f"{flow}-{tag}-{i}", flow, key))
    finally:
        await asyncio.to_thread(stack.stop)
        shutil.rmtree(home, ignore_errors=True)
    base = statistics.median(t for t, _ in figures["plain"])
    print(f"governance gates on landed dev ({SERIAL} tasks per flow, one at a time)")
    for flow, label in (
        ("plain", "no gates"),
        ("consent", "consent read before the act"),
        ("approval", "approve -> settled (pre-read, act, read back)"),
    ):
        times = sorted(t for t, _ in figures[flow])
        med, p90 = statistics.median(times), times[int(0.9 * (len(times) - 1))]
        print(
            f"  {flow:9s} {label:48s} latency {med * 1000:7.1f} ms (p90 {p90 * 1000:7.1f}) "
            f"{med / base:.2f}x plain"
        )
    update = statistics.median(d for _, d in figures["approval"])
    print(
        f"  approve Update round trip (signature, validator, record, reply): {update * 1000:.1f} ms"
    )


def main(argv: list[str] | None = None) -> int:
    asyncio.run(_run())
    return 0
