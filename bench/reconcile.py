"""The claim reconciler's throughput beside AgentTask's, on the same `landed dev`, same run.

Target (issue: loops, tripwires and the claim-stream reconciler): claims/s through VerifyClaim
>= 0.8x the tasks/s of AgentTask with pre-read off. Both flows mark one row and read it back
from the same table on the same verifier: AgentTask's act marks it on the actor; for a claim
the "agent outside Temporal" marks it from this process, then the claim line is parsed as
``landed reconcile`` parses it and its VerifyClaim started as the command starts it. Both
settle through the runner's settle step, with the confirmation read on (the runner default).

Each round runs both flows in alternating order, CONCURRENCY in flight, counting what finishes
inside a WINDOW-second window (``bench.temporal_throughput._sustain``); the ratio is printed
per round and overall, with each role's CPU per task.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import sqlite3
import statistics
import tempfile
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from bench import temporal_throughput as tt

TARGET_RATIO = 0.8
ROUNDS = int(os.environ.get("LANDED_BENCH_RECONCILE_ROUNDS", "3"))


def _claim_line(task_id: str) -> bytes:
    spec = tt.mark_spec(task_id, False)
    record: dict[str, Any] = {
        "kind": "contract",
        "task_id": task_id,
        "owner": spec["owner"],
        "outcome": spec["outcome"],
        "target": spec["target"],
        "proof_plan": spec["proof_plan"],
    }
    return json.dumps(record).encode()


async def _run() -> bool:
    from landed.receipts.model import Receipt
    from landed.task.claims_in import VerifyClaimInput, parse_claim
    from landed.temporal.claims import start_claim, wait_result
    from landed.temporal.settings import DEFAULT_RUNNER_QUEUE

    home = Path(tempfile.mkdtemp(prefix="landed-bench-reconcile-"))
    stack = tt.mark_stack(home, {"LANDED_RUNNER_TASK_MAY_SKIP_PRE_READ": "true"})
    await stack.start()
    assert stack.server is not None
    db = sqlite3.connect(tt.bench_db(home), isolation_level=None, check_same_thread=False)
    try:
        client = await stack.client()
        temporal = client.temporal
        tag = uuid.uuid4().hex[:6]

        def agent_task(prefix: str) -> Callable[[int], Awaitable[bool]]:
            async def one(i: int) -> bool:
                receipt: Receipt = await client.run(tt.mark_spec(f"{prefix}-{tag}-{i}", False))
                return receipt.verdict == "verified"

            return one

        def claim(prefix: str) -> Callable[[int], Awaitable[bool]]:
            async def one(i: int) -> bool:
                task_id = f"{prefix}-{tag}-{i}"
                db.execute("insert into marks (task) values (?)", [task_id])  # acted outside
                parsed = parse_claim(i + 1, _claim_line(task_id))
                assert isinstance(parsed, VerifyClaimInput), parsed
                started = await start_claim(temporal, parsed, task_queue=DEFAULT_RUNNER_QUEUE)
                receipt = await wait_result(started.handle)
                return receipt.verdict == "verified"

            return one

        assert stack.server.proc is not None
        roles = {role: proc.pid for role, proc in stack.roles.items()}
        pids = {"server": stack.server.proc.pid, **roles, "client": os.getpid()}
        flows = {"agent_task": agent_task, "verify_claim": claim}
        await tt._measure(tt.WARMUP, agent_task("warm-task"), pids)
        await tt._measure(tt.WARMUP, claim("warm-claim"), pids)
        done = dict.fromkeys(flows, 0)
        failed = dict.fromkeys(flows, 0)
        cpu: dict[str, dict[str, float]] = {name: {} for name in flows}
        ratios: list[float] = []
        for r in range(ROUNDS):
            rates: dict[str, float] = {}
            order = list(flows) if r % 2 == 0 else list(reversed(flows))
            for name in order:
                finished, ok, bad, used = await tt._sustain(flows[name](f"{name}-{r}"), pids)
                done[name] += ok
                failed[name] += bad + (finished - ok)
                rates[name] = ok / tt.WINDOW
                for proc, sec in used.items():
                    cpu[name][proc] = cpu[name].get(proc, 0.0) + sec
            ratios.append(rates["verify_claim"] / max(rates["agent_task"], 1e-9))
            print(
                f"round {r + 1}: agent_task {rates['agent_task']:.1f}/s, verify_claim "
                f"{rates['verify_claim']:.1f}/s, ratio "
                f"{ratios[-1]:.2f}x",
                flush=True,
            )
    finally:
        db.close()
        await asyncio.to_thread(stack.stop)
        shutil.rmtree(home, ignore_errors=True)
    print(f"median of the rounds' ratios: {statistics.median(ratios):.2f}x")
    return _report(done, failed, cpu)


def _report(done: dict[str, int], failed: dict[str, int], cpu: dict[str, dict[str, float]]) -> bool:
    seconds = ROUNDS * tt.WINDOW
    rate = {name: n / seconds for name, n in done.items()}
    ratio = rate["verify_claim"] / max(rate["agent_task"], 1e-9)
    for name in done:
        per = {p: sec * 1000 / max(done[name], 1) for p, sec in sorted(cpu[name].items())}
        cost = ", ".join(f"{p} {ms:.1f}" for p, ms in per.items())
        print(
            f"{name:13s} {rate[name]:7.1f}/s verified ({done[name]} in {seconds:.0f}s, "
            f"{failed[name]} not verified or failed); CPU ms per task: {cost}"
        )
    ok = ratio >= TARGET_RATIO and not any(failed.values())
    print(
        f"verify_claim / agent_task (pre-read off) = {ratio:.2f}x "
        f"(target >= {TARGET_RATIO}x, concurrency {tt.CONCURRENCY}): "
        f"{'met' if ok else 'NOT met'}"
    )
    return ok


def main(argv: list[str] | None = None) -> int:
    return 0 if asyncio.run(_run()) else 1


if __name__ == "__main__":
    raise SystemExit(main())
