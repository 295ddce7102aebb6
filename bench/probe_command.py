"""``command`` probe overhead, beside a bare ``subprocess.run`` of the same command.

Both sides run ``echo 45`` one at a time. The landed side is a full ``observe()`` with
``count(45)``: scrubbed environment, own process group, bounded reads of stdout and stderr,
sha256, expectation and Observation. The figure is the mean time per probe, the baseline the
mean time per ``subprocess.run(argv, capture_output=True)``.

Target (issue 3): landed's time per probe <= 2x the bare subprocess.run.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time

from bench._probe_common import report
from landed.probes.contract import CommandProbe, Count
from landed.probes.observe import observe
from landed.probes.sources import SourceRegistry

N = int(os.environ.get("LANDED_BENCH_COMMAND_N", "400"))
ARGV = ["echo", "45"]
TARGET_RATIO = 2.0


async def _landed() -> float:
    probe = CommandProbe(argv=ARGV)
    expect = Count(value=45)
    async with SourceRegistry({}, allow_unsourced=True) as registry:
        for _ in range(20):
            await observe(probe, expect, registry=registry, observer="bench")
        start = time.perf_counter()
        for _ in range(N):
            obs = await observe(probe, expect, registry=registry, observer="bench")
            if obs.outcome.value != "pass":
                raise SystemExit(f"the probe did not pass: {obs.message}")
        return (time.perf_counter() - start) / N


def _baseline() -> float:
    for _ in range(20):
        subprocess.run(ARGV, capture_output=True, check=True)
    start = time.perf_counter()
    for _ in range(N):
        subprocess.run(ARGV, capture_output=True, check=True)
    return (time.perf_counter() - start) / N


def main(argv: list[str] | None = None) -> int:
    # Alternate the two sides so a change in machine load hits both alike; keep the best
    # round of each.
    landed_times: list[float] = []
    bare_times: list[float] = []
    for _ in range(3):
        bare_times.append(_baseline())
        landed_times.append(asyncio.run(_landed()))
    figure = min(landed_times) * 1000
    baseline = min(bare_times) * 1000
    ratio = figure / baseline
    report(
        f"command probe overhead ({' '.join(ARGV)}, {N} runs x 3 rounds, best round)",
        figure,
        baseline,
        "ms/probe",
        f"<= {TARGET_RATIO:.0f}x",
        ratio <= TARGET_RATIO,
        ratio,
    )
    return 0 if ratio <= TARGET_RATIO else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
