"""Shared pieces of the probe benchmarks: RSS, a bounded-concurrency runner, the report line."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable


def rss_mb() -> float:
    """Resident set size now (not the peak), from /proc."""
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


async def run_bounded(
    n: int,
    concurrency: int,
    one: Callable[[int], Awaitable[None]],
    on_progress: Callable[[int], None] | None = None,
) -> float:
    """Run ``one(i)`` for i in range(n), at most ``concurrency`` at a time; seconds taken."""
    counter = iter(range(n))
    done = 0

    async def worker() -> None:
        nonlocal done
        for i in counter:
            await one(i)
            done += 1
            if on_progress is not None:
                on_progress(done)

    start = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return time.perf_counter() - start


def cpu_line(label: str, figure_cpu_us: float, baseline_cpu_us: float) -> None:
    """CPU time per probe, which machine load disturbs less than wall-clock rates do."""
    print(
        f"  {label} CPU per probe (this process): landed {figure_cpu_us:,.0f} us, baseline "
        f"{baseline_cpu_us:,.0f} us; one free core would allow ~{1e6 / figure_cpu_us:,.0f} "
        f"probes/s (baseline ~{1e6 / baseline_cpu_us:,.0f}/s)",
        flush=True,
    )


def report(
    label: str, figure: float, baseline: float, unit: str, target: str, ok: bool, ratio: float
) -> None:
    verdict = "PASS" if ok else "MISS"
    print(
        f"{label}: {figure:,.1f} {unit} | baseline {baseline:,.1f} {unit} | "
        f"ratio {ratio:.2f} | target {target} | {verdict}",
        flush=True,
    )
