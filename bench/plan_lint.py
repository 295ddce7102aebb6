"""Plan lint of a 20-probe plan, beside validating the same task.

The figure is the time ``landed plan lint`` spends on the plan once it is read: every step's
seven bad writes judged (with a pre-read) by the verifier's own judges. The baseline is
``check_spec`` of the same task JSON, what ``landed submit`` does to it before anything runs.
Both are the best of several rounds of ``N`` runs each, one at a time.

Target (issue 22): under 50 ms for a 20-probe plan.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Callable
from typing import Any

from bench._probe_common import report
from landed.cli.plan import lint_spec
from landed.task.validate import check_spec

N = int(os.environ.get("LANDED_BENCH_PLAN_LINT_N", "50"))
TARGET_MS = 50.0
_HTTP = {"kind": "http", "source": "site", "url": "/orders/1"}
_EXPECTS: list[tuple[dict[str, Any], dict[str, Any] | None]] = [
    ({"type": "count", "value": 45}, None),
    ({"type": "at_least", "value": 3}, None),
    ({"type": "equals", "value": "published"}, _HTTP),
    ({"type": "contains", "value": "Hello"}, _HTTP),
    ({"type": "regex", "value": "^order-[0-9]+$"}, _HTTP),
    ({"type": "json_path", "path": "$.items[0].status", "value": "paid"}, _HTTP),
    ({"type": "rung_at_least", "value": "delivered"}, _HTTP),
    ({"type": "count", "value": 0}, None),
    ({"type": "equals", "value": {"id": 7, "state": "open"}}, _HTTP),
    ({"type": "non_empty"}, _HTTP),
]


def _task(steps: int = 20) -> bytes:
    plan = []
    for i in range(steps):
        expect, probe = _EXPECTS[i % len(_EXPECTS)]
        probe = probe or {
            "kind": "record",
            "source": "orders-db",
            "query": "select count(*) from orders where batch = ?",
            "params": [f"b{i}"],
        }
        plan.append({"action": f"step {i}", "probe": probe, "expect": expect})
    task = {
        "task_id": "bench-lint",
        "owner": "bench",
        "outcome": "twenty things landed",
        "act": {"name": "bench.act"},
        "proof_plan": plan,
    }
    return json.dumps(task).encode()


def _best(fn: Callable[[], object], rounds: int = 5) -> float:
    """Best mean seconds per call over ``rounds`` rounds of N calls (after a warm-up)."""
    for _ in range(3):
        fn()
    best = float("inf")
    for _ in range(rounds):
        start = time.perf_counter()
        for _ in range(N):
            fn()
        best = min(best, (time.perf_counter() - start) / N)
    return best


def main(argv: list[str] | None = None) -> int:
    data = _task()
    spec = check_spec(data).spec
    plan = lint_spec(spec)
    assert len(plan.steps) == 20 and not plan.unjudged, [s.problem for s in plan.steps]
    baseline = _best(lambda: check_spec(data)) * 1000
    figure = _best(lambda: lint_spec(spec)) * 1000
    ok = figure < TARGET_MS
    report(
        f"plan lint of a 20-probe plan ({N} runs x 5 rounds, best round; baseline check_spec)",
        figure,
        baseline,
        "ms/plan",
        f"< {TARGET_MS:.0f} ms",
        ok,
        figure / baseline,
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
