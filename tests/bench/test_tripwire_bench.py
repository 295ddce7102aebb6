"""The tripwire read bench at tiny sizes, on SQLite: both reads are timed at both sizes and
reported side by side, and each read returned exactly the rows new after its cursor (the bench
raises otherwise). No ratio is asserted (a shared 2-core machine)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_the_stream_reads_are_timed_at_both_sizes_side_by_side() -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LANDED_", "TEMPORAL_"))}
    env["LANDED_BENCH_TRIPWIRE_SIZES"] = "1500,3000"
    env["LANDED_BENCH_TRIPWIRE_BACKENDS"] = "sqlite"
    done = subprocess.run(
        [sys.executable, "-m", "bench", "tripwire"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode in (0, 1), done.stdout + done.stderr  # 1: a target not met
    out = done.stdout
    assert "populated 1,500 receipts" in out and "populated 3,000 receipts" in out, out
    assert "1,500 receipts beside 3,000" in out, out
    for read in ("stream read, 0 new", "stream read, 10 new"):
        row = rf"{read} +[\d.]+ ms +[\d.]+ ms +ratio +[\d.]+ +(met|MISSED)"
        assert re.search(row, out), (read, out)
    assert "postgres" not in out.lower(), out
