"""``landed check FILE --json`` timed as a whole process, beside a whole ``python -c`` orjson loop.

Issue 33's measure: process start and imports count on both sides. Each side is one process
started from here and timed from outside (wall clock from spawn to reaped), the two alternating,
several times; the figures are medians. A large file is graded by two processes (``landed
check`` forks a second): the peak RSS is each process's peak high-water mark, summed, read from
/proc while they run, in a run of its own so the sampling does not slow the timed runs.
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import NamedTuple

#: The baseline, as issue 33 writes it: the bare loop, its start and ``import orjson`` included.
ORJSON_LOOP = (
    "import sys, orjson\n"
    "with open(sys.argv[1], 'rb') as f:\n"
    "    for line in f: orjson.loads(line)\n"
)


class Run(NamedTuple):
    wall_s: float
    cpu_s: float  # user + system of the process and the processes it waited for
    status: int


def landed_command() -> str:
    """The console entry point beside this interpreter (the venv's ``landed``)."""
    beside = Path(sys.executable).with_name("landed")
    found = str(beside) if beside.exists() else shutil.which("landed")
    if found is None:
        raise SystemExit("no landed command found: run make install")
    return found


def timed(argv: list[str]) -> Run:
    """Run ``argv`` with stdout to /dev/null; its wall time from spawn to reaped, and its CPU."""
    with open(os.devnull, "wb") as sink:
        start = time.perf_counter()
        proc = subprocess.Popen(argv, stdout=sink, stderr=subprocess.PIPE)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    err = proc.stderr.read() if proc.stderr is not None else b""
    if proc.returncode not in (0, 1):  # landed check exits 1 when a done claim misses its bar
        raise SystemExit(f"{argv[0]} failed ({proc.returncode}): {err[-2000:]!r}")
    return Run(wall, usage.ru_utime + usage.ru_stime, proc.returncode)


def _peak_kb(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/status", "rb") as status:
            for row in status:
                if row.startswith(b"VmHWM:"):
                    return int(row.split()[1])
    except OSError:
        return None
    return None


def _children(pid: int) -> list[int]:
    try:
        with open(f"/proc/{pid}/task/{pid}/children", "rb") as file:
            return [int(word) for word in file.read().split()]
    except OSError:
        return []


def peak_rss_mb(argv: list[str], every_s: float = 0.005) -> float:
    """The summed peak RSS of ``argv``'s process and every process it starts, in MB: each one's
    VmHWM as last sampled, and never less than the largest peak the kernel reports at exit."""
    peaks: dict[int, int] = {}
    with open(os.devnull, "wb") as sink:
        proc = subprocess.Popen(argv, stdout=sink, stderr=subprocess.DEVNULL)
        while True:
            tree = [proc.pid]
            for pid in tree:  # grows as it goes: children, then theirs
                tree.extend(_children(pid))
            for pid in tree:
                peak = _peak_kb(pid)
                if peak is not None:
                    peaks[pid] = max(peaks.get(pid, 0), peak)
            done, _, usage = os.wait4(proc.pid, os.WNOHANG)
            if done:
                break
            time.sleep(every_s)
    proc.returncode = 0
    return max(sum(peaks.values()), usage.ru_maxrss) / 1024


class Whole(NamedTuple):
    check: list[Run]
    baseline: list[Run]
    rss_mb: float

    @staticmethod
    def median_wall(runs: list[Run]) -> float:
        return statistics.median(run.wall_s for run in runs)

    @staticmethod
    def median_cpu(runs: list[Run]) -> float:
        return statistics.median(run.cpu_s for run in runs)

    @property
    def ratio(self) -> float:
        """The checker's speed as a share of the loop's: baseline time over checker time."""
        return self.median_wall(self.baseline) / self.median_wall(self.check)

    @property
    def pair_ratios(self) -> list[float]:
        return [b.wall_s / c.wall_s for b, c in zip(self.baseline, self.check, strict=True)]


def measure(path: Path, repetitions: int) -> Whole:
    """Both processes over ``path``, alternating (the order swapped each round), then one
    sampled run of the checker for its peak RSS."""
    check = [landed_command(), "check", str(path), "--json"]
    baseline = [sys.executable, "-c", ORJSON_LOOP, str(path)]
    checks: list[Run] = []
    baselines: list[Run] = []
    for round_ in range(repetitions):
        if round_ % 2:
            checks.append(timed(check))
            baselines.append(timed(baseline))
        else:
            baselines.append(timed(baseline))
            checks.append(timed(check))
    return Whole(checks, baselines, peak_rss_mb(check))


def report(whole: Whole, lines: int, target_ratio: float, target_rss_mb: float) -> list[str]:
    """The figures, each beside its baseline from the same run, and the targets' verdicts."""
    check_wall, base_wall = whole.median_wall(whole.check), whole.median_wall(whole.baseline)
    check_cpu, base_cpu = whole.median_cpu(whole.check), whole.median_cpu(whole.baseline)
    verdict = {True: "PASS", False: "MISS"}
    pairs = ", ".join(f"{r:.2f}" for r in whole.pair_ratios)
    return [
        f"whole process, {lines:,} lines, median of {len(whole.check)} alternating runs "
        f"(load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores):",
        f"  landed check FILE --json     wall {check_wall:6.2f} s   cpu {check_cpu:6.2f} s   "
        f"{lines / check_wall:>10,.0f} lines/s   peak RSS {whole.rss_mb:,.0f} MB (all processes)",
        f"  baseline: python -c orjson   wall {base_wall:6.2f} s   cpu {base_cpu:6.2f} s   "
        f"{lines / base_wall:>10,.0f} lines/s",
        f"  ratio {whole.ratio:.2f}x (each round: {pairs}); cpu ratio {base_cpu / check_cpu:.2f}x",
        f"  target >= {target_ratio}x: {verdict[whole.ratio >= target_ratio]}; "
        f"RSS < {target_rss_mb:.0f} MB: {verdict[whole.rss_mb < target_rss_mb]}",
    ]
