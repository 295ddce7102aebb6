"""Peak memory of each role with 2,000 tasks in flight at once on `landed dev`, nothing lost.

Target (issue 33): the runner's, the actor's and the verifier's peak RSS (VmRSS from /proc, a
role's children included) each under 300 MB while LANDED_BENCH_MEMORY_TASKS (2,000) default-flow
AgentTasks are in flight, and every task settled verified: from its result and from the ledger
(one receipt, verified, and one row written by the act). The Temporal dev server and this
client are sampled too, reported but not targeted.

Every task is started before any is awaited, and its act (bench.held_mark) holds until the bench
opens its gate once all are started, so all of them are in flight at the peak: counted by the
client (started, not settled) and by Temporal's visibility (running). In the same run, beside
it: each process at idle before the load, and the same act held and released in a plain
Temporal workflow (BenchActOnly on the floors' worker, the runner's worker shape) at the same
number in flight.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sqlite3
import sys
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from bench._rss import Peaks, hwm_mb
from bench._scale_report import verdicts
from bench.temporal_throughput import BASELINE_QUEUE, bench_db, bench_stack, mark_spec

TASKS = int(os.environ.get("LANDED_BENCH_MEMORY_TASKS", "2000"))
TARGET_MB = 300.0
TARGETED = ("runner", "actor", "verifier")
# Idle: the stack started and nothing asked of it, sampled this long before the load.
IDLE_S = 3.0
# Starts in flight at once: all tasks are started before any is awaited, this many RPCs at a time.
STARTS_AT_ONCE = 200
# Results awaited at once: Temporal serves a namespace only so many long polls at a time (the
# dev server about 1,000), and the workers' own polls count against the same limit: 2,000
# waiters at once starve the workers (landed's waiters retry, and the tasks crawl).
WAITERS = 200
# The per-start role check: "first" asks the roles before the first task only, as every user's
# client does, then starts the rest without asking; "each" asks before every start (the asking
# waits on the actor's queue, which the held acts fill: see docs/benchmarks.md).
ROLE_CHECK = os.environ.get("LANDED_BENCH_MEMORY_ROLE_CHECK", "first")
# How long visibility may take to list every started task as running before the gate opens.
VISIBLE_WAIT_S = 30.0
# A task not settled by then is lost, and the bench goes on to its report.
LIMIT_S = float(os.environ.get("LANDED_BENCH_MEMORY_LIMIT_S", "1200"))


@dataclass
class Phase:
    """One burst: n tasks started, held until all were in flight, then released and awaited."""

    name: str
    tasks: int
    started: int = 0
    in_flight_client: int = 0
    in_flight_visible: int = 0
    settled_ok: int = 0
    ledger_ok: int | None = None
    failures: list[str] = field(default_factory=list)
    start_s: float = 0.0
    wall_s: float = 0.0
    peaks_mb: dict[str, float] = field(default_factory=dict)
    samples: int = 0

    @property
    def lost(self) -> int:
        return self.tasks - self.settled_ok


Start = Callable[[str, str], Awaitable[Any]]
Wait = Callable[[Any], Awaitable[bool]]


def _held_spec(task_id: str, gate: str) -> dict[str, Any]:
    """The default flow's marks task (pre-read, read-back, confirmation), its act held at gate."""
    return {**mark_spec(task_id, True), "act": {"name": "bench.held_mark", "input": {"gate": gate}}}


def _open_gate(db: Path, gate: str) -> None:
    with sqlite3.connect(db) as conn:
        conn.execute("insert into gate (name) values (?)", [gate])


async def _visible(temporal: Any, workflow: str, want: int) -> int:
    """How many runs of ``workflow`` visibility lists as running, polled until ``want`` are
    listed or VISIBLE_WAIT_S passes (visibility trails the starts)."""
    query = f"WorkflowType = '{workflow}' AND ExecutionStatus = 'Running'"
    seen, until = 0, time.monotonic() + VISIBLE_WAIT_S
    while seen < want and time.monotonic() < until:
        seen = max(seen, (await temporal.count_workflows(query)).count)
        await asyncio.sleep(0.5)
    return seen


async def _start_all(
    phase: Phase, ids: list[str], start: Callable[[str], Awaitable[Any]]
) -> dict[str, Any]:
    """Start every task, STARTS_AT_ONCE at a time; a start that fails is the phase's failure."""
    gate = asyncio.Semaphore(STARTS_AT_ONCE)
    handles: dict[str, Any] = {}

    async def one(task_id: str) -> None:
        async with gate:
            try:
                handles[task_id] = await start(task_id)
            except Exception as exc:  # any refusal is a task lost, reported
                phase.failures.append(f"{task_id} not started: {exc!r}")

    await asyncio.gather(*(one(t) for t in ids))
    phase.started = len(handles)
    return handles


async def _settle_all(phase: Phase, handles: dict[str, Any], wait: Wait) -> None:
    """Await every started task's result, WAITERS at a time; what is not settled by LIMIT_S is
    lost."""
    gate = asyncio.Semaphore(WAITERS)

    async def one(task_id: str, handle: Any) -> None:
        try:
            async with gate:
                ok = await wait(handle)
            if ok:
                phase.settled_ok += 1
            else:
                phase.failures.append(f"{task_id} settled, not verified")
        except Exception as exc:  # a failed task is counted and named
            phase.failures.append(f"{task_id} failed: {exc!r}")

    tasks = [asyncio.ensure_future(one(t, h)) for t, h in handles.items()]
    if not tasks:
        return
    _, pending = await asyncio.wait(tasks, timeout=LIMIT_S)
    for task in pending:
        task.cancel()
    if pending:
        phase.failures.append(f"{len(pending)} tasks not settled within {LIMIT_S:.0f} s")


async def _burst(
    phase: Phase, temporal: Any, workflow: str, flow: tuple[Start, Wait], db: Path
) -> list[str]:
    """Start ``phase.tasks`` tasks held at a gate, count them in flight, release, await all."""
    start, wait = flow
    gate = uuid.uuid4().hex[:6]
    ids = [f"mem-{phase.name}-{gate}-{i}" for i in range(phase.tasks)]
    began = time.perf_counter()
    handles = await _start_all(phase, ids, lambda task_id: start(task_id, gate))
    phase.start_s = time.perf_counter() - began
    # Nothing settles before the gate opens: every started task is in flight now.
    phase.in_flight_client = len(handles)
    phase.in_flight_visible = await _visible(temporal, workflow, len(handles))
    _open_gate(db, gate)
    await _settle_all(phase, handles, wait)
    phase.wall_s = time.perf_counter() - began
    return list(handles)


def _landed_flow(client: Any) -> tuple[Start, Wait]:
    """Starts through the landed client: the first asks the roles; the rest ask too with
    ROLE_CHECK "each", else start as a client made with check_roles=False does."""
    from landed.temporal.client import Client

    unchecked = Client(client.temporal, task_queue=client.task_queue, check_roles=False)
    first = asyncio.Lock()
    asked = False

    async def start(task_id: str, gate: str) -> Any:
        nonlocal asked
        spec = _held_spec(task_id, gate)
        if ROLE_CHECK == "each":
            return await client.start(spec)
        async with first:  # the others wait for the first start's answer
            if not asked:
                handle = await client.start(spec)
                asked = True
                return handle
        return await unchecked.start(spec)

    async def wait(handle: Any) -> bool:
        receipt = await handle.result()
        return bool(receipt.verdict == "verified")

    return start, wait


def _act_only_flow(temporal: Any) -> tuple[Start, Wait]:
    from landed.task.messages import ActReport
    from landed.task.spec import TaskSpec
    from landed.temporal.settings import DEFAULT_ACTOR_QUEUE, DEFAULT_VERIFIER_QUEUE

    memo = {"actor_task_queue": DEFAULT_ACTOR_QUEUE, "verifier_task_queue": DEFAULT_VERIFIER_QUEUE}

    async def start(task_id: str, gate: str) -> Any:
        spec = TaskSpec.model_validate(_held_spec(task_id, gate))
        return await temporal.start_workflow(
            "BenchActOnly",
            spec,
            id=task_id,
            task_queue=BASELINE_QUEUE,
            memo=memo,
            result_type=ActReport,
        )

    async def wait(handle: Any) -> bool:
        report = await handle.result()
        return bool(report.claimed_status == "done")

    return start, wait


async def _phases(stack: Any, client: Any, peaks: Peaks, tasks: int, act_only: bool) -> list[Phase]:
    from landed.task.names import AGENT_TASK_WORKFLOW

    await asyncio.sleep(IDLE_S)
    idle = Phase("idle", 0)
    idle.peaks_mb, idle.samples = peaks.take()
    out = [idle]
    landed = Phase("landed", tasks)
    db = bench_db(stack.home.parent)
    ids = await _burst(landed, client.temporal, AGENT_TASK_WORKFLOW, _landed_flow(client), db)
    found = await verdicts(stack.addresses()["ledger"], db, ids)
    landed.ledger_ok = sum(v == "verified" for v in found.values())
    landed.failures += [f"{t}: {v}" for t, v in found.items() if v != "verified"]
    landed.peaks_mb, landed.samples = peaks.take()
    out.append(landed)
    if act_only:
        plain = Phase("act_only", tasks)
        await _burst(plain, client.temporal, "BenchActOnly", _act_only_flow(client.temporal), db)
        plain.peaks_mb, plain.samples = peaks.take()
        out.append(plain)
    return out


async def _run(tasks: int, act_only: bool) -> dict[str, Any]:
    async with bench_stack() as (stack, client, baseline):
        with sqlite3.connect(bench_db(stack.home.parent)) as conn:
            conn.execute("create table if not exists gate (name text)")
        pids = {role: proc.pid for role, proc in stack.roles.items()}
        pids["server"] = stack.server.proc.pid
        pids["client"] = os.getpid()
        pids["act_only_worker"] = baseline.pid
        cache = _runner_cache(stack)
        # The client's children are the stack itself: it is sampled alone.
        with Peaks(pids, alone={"client"}) as peaks:
            phases = await _phases(stack, client, peaks, tasks, act_only)
        hwm = {name: hwm_mb(pid) for name, pid in pids.items()}
    return {
        "bench": "memory",
        "tasks": tasks,
        "target_mb": TARGET_MB,
        "runner_max_cached_workflows": cache,
        "role_check": ROLE_CHECK,
        "phases": [{**asdict(p), "lost": p.lost} for p in phases],
        "hwm_mb": hwm,
    }


def _runner_cache(stack: Any) -> int:
    """The runner's sticky workflow cache size, as its settings read it."""
    from landed.temporal.settings import RunnerSettings

    env = stack.role_environment("runner")
    default = RunnerSettings.model_fields["max_cached_workflows"].default
    return int(env.get("LANDED_RUNNER_MAX_CACHED_WORKFLOWS", default))


def _verdicts(report: dict[str, Any]) -> dict[str, bool]:
    """Per targeted role: its peak under load under the target; and nothing lost."""
    landed = report["phases"][1]
    met = {role: landed["peaks_mb"].get(role, 0.0) < TARGET_MB for role in TARGETED}
    met["in_flight"] = landed["in_flight_client"] == report["tasks"]
    met["nothing_lost"] = (
        landed["lost"] == 0 and landed["ledger_ok"] == report["tasks"] and not landed["failures"]
    )
    return met


def _lines(report: dict[str, Any]) -> list[str]:
    phases = {p["name"]: p for p in report["phases"]}
    landed, idle, plain = phases["landed"], phases["idle"], phases.get("act_only")
    n, met = report["tasks"], report["met"]
    out = [
        f"  in flight at peak: {landed['in_flight_client']} of {n} (started, none settled), "
        f"{landed['in_flight_visible']} listed running by visibility",
        f"  settled verified: {landed['settled_ok']} by result, {landed['ledger_ok']} in the "
        f"ledger (one receipt, verified, one act write); lost {landed['lost']}, "
        f"failures {len(landed['failures'])}",
        f"  wall time {landed['wall_s']:.1f} s (starting all {landed['start_s']:.1f} s); "
        f"runner max_cached_workflows {report['runner_max_cached_workflows']}, role check "
        f"{report['role_check']}",
        f"  peak RSS, MB   {'idle':>8} {'under load':>11} {'act-only':>9} {'lifetime':>9}  target",
    ]
    rows = ("runner", "actor", "verifier", "server", "client", "act_only_worker")
    for name in rows:
        load = landed["peaks_mb"].get(name, 0.0)
        base = f"{plain['peaks_mb'].get(name, 0.0):9.1f}" if plain else f"{'-':>9}"
        verdict = f"< {TARGET_MB:.0f}  {'PASS' if met[name] else 'FAIL'}" if name in met else ""
        out.append(
            f"  {name:<15}{idle['peaks_mb'].get(name, 0.0):8.1f} {load:11.1f} {base} "
            f"{report['hwm_mb'].get(name, 0.0):9.1f}  {verdict}"
        )
    if plain:
        out.append(
            f"  act-only: {plain['in_flight_client']} in flight ({plain['in_flight_visible']} "
            f"visible), {plain['settled_ok']} done, lost {plain['lost']}, {plain['wall_s']:.1f} s"
        )
    out += [f"  failure: {f}" for f in landed["failures"][:10]]
    out += [f"  act-only failure: {f}" for f in (plain or {}).get("failures", [])[:3]]
    out.append(f"  nothing lost: {'PASS' if met['nothing_lost'] else 'FAIL'}")
    return out


def _args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.memory", description=__doc__)
    parser.add_argument("--tasks", type=int, default=TASKS, help="tasks in flight at once")
    parser.add_argument("--no-act-only", action="store_true", help="skip the act-only burst")
    parser.add_argument("--json", action="store_true", help="print one JSON report")
    args = parser.parse_args(argv)
    if args.tasks < 1:
        parser.error("--tasks must be at least 1")
    return args


def main(argv: list[str] | None = None) -> int:
    args = _args(list(argv or []))
    if not args.json:
        print(f"memory: {args.tasks} tasks in flight at once on landed dev", flush=True)
    report = asyncio.run(_run(args.tasks, not args.no_act_only))
    report["met"] = _verdicts(report)
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print("\n".join(_lines(report)))
    return 0 if all(report["met"].values()) else 1


if __name__ == "__main__":
    status = main(sys.argv[1:])
    sys.stdout.flush()
    os._exit(status)  # the SDK can crash in interpreter teardown (sdk-python#300)
