"""Offline ``landed check`` throughput on 1M generated receipts, beside a bare orjson parse loop.

Targets (issue 2): >= 200,000 receipts/s, >= 0.4x the orjson loop over the same file, and a
peak RSS under 200 MB. Each side runs in its own subprocess, which reports its own peak RSS.
The checker side calls ``run_check``, the function behind ``landed check`` (reader, decoder,
grader, scorecard and report), with its output sent to /dev/null.

Then issue 33's measure, over 300,000 lines: the whole process ``landed check FILE --json``
(start and imports included) beside a whole ``python -c`` orjson loop, >= 0.4x and under
200 MB (``bench._check_process``). ``LANDED_BENCH_CHECK_WHOLE_N`` and
``LANDED_BENCH_CHECK_REPS`` set its line count and repetitions.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from pathlib import Path

import orjson

from bench import _check_process

N = int(os.environ.get("LANDED_BENCH_CHECK_N", "1000000"))
DATA = Path(__file__).resolve().parent / ".data"
TARGET_RATE = 200_000.0
TARGET_RATIO = 0.4
TARGET_RSS_MB = 200.0
WHOLE_N = int(os.environ.get("LANDED_BENCH_CHECK_WHOLE_N", "300000"))
REPS = int(os.environ.get("LANDED_BENCH_CHECK_REPS", "5"))

_CHILD = r"""
import os, resource, sys, time
mode, path = sys.argv[1], sys.argv[2]
if mode == "baseline":
    import orjson
    loads = orjson.loads
    start = time.perf_counter()
    n = 0
    with open(path, "rb") as f:
        for line in f:
            loads(line)
            n += 1
    elapsed = time.perf_counter() - start
    code = 0
else:
    from landed.cli.check import run_check
    with open(os.devnull, "w") as out:
        start = time.perf_counter()
        code = run_check(path, as_json=(mode == "json"), out=out)
        elapsed = time.perf_counter() - start
    n = int(sys.argv[3])
# A large file is graded by two processes (the second forked): count both peaks, summed, an
# upper bound on what they held together.
rss_mb = (
    resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    + resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
) / 1024
print(f"{n} {elapsed} {rss_mb} {code}")
"""

_KINDS = ("good", "loose", "overclaimed", "held", "blocked", "scaffold", "reconciled")


def _receipt(rng: random.Random, i: int) -> dict[str, object]:
    """One receipt of the sample's seven kinds, in equal shares, with varying ids and figures."""
    kind = _KINDS[i % len(_KINDS)]
    task = f"task-{i:07d}"
    at = f"2026-11-{1 + i % 28:02d}T{i % 24:02d}:{i % 60:02d}:{(i * 7) % 60:02d}Z"
    cost = {
        "input_tokens": rng.randrange(1_000, 500_000),
        "output_tokens": rng.randrange(100, 20_000),
        "usd": round(rng.uniform(0.01, 2.0), 4),
    }
    url = f"https://site-{i % 997}.example.com/pages/{i}"
    if kind == "loose":
        return {"id": task, "status": rng.choice(("done", "done", "executed", "failed"))}
    base: dict[str, object] = {
        "dod": "1.0",
        "task_id": task,
        "owner": f"worker-{i % 13}",
        "outcome": f"Page {i} is live at its URL and shows plan {i % 5}",
        "target": url,
        "claimed_status": "done",
        "report": "Merged the change and confirmed the page.",
        "exit_code": 0,
        "proof": [
            {
                "kind": "pull_request",
                "ref": f"https://git.example.com/site/pull/{i}",
                "checked_by": "actor",
                "result": "pass",
            },
            {
                "kind": "http_contains",
                "ref": url,
                "expect": f"plan {i % 5}",
                "checked_by": "runner",
                "checked_at": at,
                "result": "pass",
            },
        ],
        "cost": cost,
        "verdict": "done",
        "verdict_by": "runner",
        "settled_at": at,
    }
    if kind == "overclaimed":
        base["proof"][1]["checked_by"] = "actor"  # type: ignore[index]
        base["verdict_by"] = base["owner"]
    elif kind == "held":
        base.update(claimed_status="held", proof=[], approval={"required": True}, verdict=None)
        base["report"] = "Drafted it; publishing waits for a person's approval."
    elif kind == "blocked":
        base["report"] = f"Deployed build {i}; the DNS change is still pending at the registrar."
    elif kind == "scaffold":
        local = f"http://localhost:{3000 + i % 100}/pages/{i}"
        base["target"] = local
        base["proof"][1]["ref"] = local  # type: ignore[index]
        base["report"] = "Built the page with placeholder copy; it renders locally."
    elif kind == "reconciled":
        base.update(claimed_status="reconciled", verdict="reconciled")
        base["business_outcome"] = {"class": "payment", "ref": f"pay_{i}", "verified": True}
        base["landed"] = {"attempt": 1, "revenue_usd": round(rng.uniform(10, 500), 2)}
    return base


def generate(path: Path, n: int) -> None:
    """Write ``n`` receipts to ``path`` (skipped when a file of that size is already there)."""
    marker = path.with_suffix(".count")
    if path.exists() and marker.exists() and marker.read_text() == str(n):
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    rng = random.Random(2)
    with path.open("wb") as out:
        batch: list[bytes] = []
        for i in range(n):
            batch.append(orjson.dumps(_receipt(rng, i)))
            if len(batch) == 10_000:
                out.write(b"\n".join(batch) + b"\n")
                batch.clear()
        if batch:
            out.write(b"\n".join(batch) + b"\n")
    marker.write_text(str(n))


def _run(mode: str, path: Path, n: int) -> tuple[float, float, int]:
    proc = subprocess.run(
        [sys.executable, "-c", _CHILD, mode, str(path), str(n)],
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode != 0:
        raise SystemExit(f"{mode} run failed ({proc.returncode}): {proc.stderr[-2000:]}")
    count, elapsed, rss, code = proc.stdout.split()
    return int(count) / float(elapsed), float(rss), int(code)


def main(argv: list[str] | None = None) -> int:
    path = DATA / f"receipts-{N}.jsonl"
    generate(path, N)
    size_mb = path.stat().st_size / 1e6
    print(
        f"input: {N:,} receipts, {size_mb:,.0f} MB ({size_mb * 1e6 / N:,.0f} bytes/line), "
        f"seven kinds in equal shares"
    )
    base_rate, base_rss, _ = _run("baseline", path, N)
    rate, rss, code = _run("text", path, N)
    json_rate, json_rss, _ = _run("json", path, N)
    ratio, json_ratio = rate / base_rate, json_rate / base_rate
    ok_rate, ok_ratio = rate >= TARGET_RATE, ratio >= TARGET_RATIO
    ok_rss = max(rss, json_rss) < TARGET_RSS_MB
    rows = [
        ("landed check (text report)", f"{rate:,.0f} receipts/s", rss),
        ("landed check --json", f"{json_rate:,.0f} receipts/s", json_rss),
        ("baseline: bare orjson loop", f"{base_rate:,.0f} lines/s", base_rss),
    ]
    for label, figure, memory in rows:
        print(f"  {label:<28} {figure:>20}   peak RSS {memory:,.0f} MB (all processes)")
    print(f"  ratio {ratio:.2f}x (--json {json_ratio:.2f}x); check exit code {code}")
    verdict = {True: "PASS", False: "MISS"}
    print(
        f"  target >= {TARGET_RATE:,.0f}/s: {verdict[ok_rate]} "
        f"(--json {verdict[json_rate >= TARGET_RATE]}); >= {TARGET_RATIO}x: {verdict[ok_ratio]} "
        f"(--json {verdict[json_ratio >= TARGET_RATIO]}); RSS < {TARGET_RSS_MB:.0f} MB: "
        f"{verdict[ok_rss]}"
    )
    whole_path = DATA / f"receipts-{WHOLE_N}.jsonl"
    generate(whole_path, WHOLE_N)
    whole = _check_process.measure(whole_path, REPS)
    for row in _check_process.report(whole, WHOLE_N, TARGET_RATIO, TARGET_RSS_MB):
        print(row)
    ok_whole = whole.ratio >= TARGET_RATIO and whole.rss_mb < TARGET_RSS_MB
    summary = {
        "figure": rate,
        "json_figure": json_rate,
        "baseline": base_rate,
        "ratio": ratio,
        "json_ratio": json_ratio,
        "peak_rss_mb": max(rss, json_rss),
        "whole_ratio": whole.ratio,
        "whole_check_s": whole.median_wall(whole.check),
        "whole_baseline_s": whole.median_wall(whole.baseline),
        "whole_peak_rss_mb": whole.rss_mb,
        "pass": ok_rate and ok_ratio and ok_rss and ok_whole,
    }
    print(json.dumps(summary))
    return 0 if summary["pass"] else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
