"""The latency bench at a tiny size: every flow reports its three percentiles and its ratio
to the floor, and each landed task settles verified (the bench raises otherwise). No timing is
asserted (a shared 2-core machine)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
FLOWS = (
    "act alone",
    "floor",
    "floor+2",
    "lean's steps",
    "default's steps",
    "lean, interval 0",
    "default, interval 0",
    "lean, default interval",
    "default, default interval",
)


@pytest.mark.slow  # a real landed dev and every flow: about 30 s
def test_every_flow_reports_p50_p90_p99_beside_the_floor() -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LANDED_", "TEMPORAL_"))}
    env["LANDED_BENCH_LATENCY_TASKS"] = "3"
    done = subprocess.run(
        [sys.executable, "-m", "bench", "latency"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=400,
        check=False,
    )
    assert done.returncode in (0, 1), done.stdout + done.stderr  # 1: a target not met
    for in_flight in (1, 5):
        for flow in FLOWS:
            figures = r" +[\d.]+ +/ +[\d.]+ +/ +[\d.]+ +p50 [\d.]+x"
            line = rf"{in_flight} in flight  {re.escape(flow)}{figures}"
            assert re.search(line, done.stdout), (flow, in_flight, done.stdout, done.stderr[-3000:])
    assert done.stdout.count("target ") == 4, done.stdout
    assert re.search(
        r"lean, interval 0 +[\d.]+ +/ +[\d.]+ +/ +[\d.]+ +p50 [\d.]+x floor\+2"
        r" +p50 [\d.]+x lean's steps",
        done.stdout,
    ), done.stdout
