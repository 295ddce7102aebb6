"""AgentTask throughput on `landed dev` beside a workflow running the same act alone.

Targets (issue: the Temporal spine): act + verify + settle >= 0.65x the throughput of the same
act alone (one extra server round trip is the floor), and >= 30 verified tasks/s sustained on
this 2-core machine with `landed dev` defaults (SQLite file with WAL, three role processes).

Each flow is measured as the rate it sustains with a fixed number of tasks in flight, in short
phases that alternate with the other flows'. Both figures come from the same run on the same
dev server: the baseline workflow runs in its own worker process, like the runner, and its act
runs on the same actor process. The default
AgentTask also pre-reads the before-state (one more verifier round trip, so a proof can't be
vacuous); it is measured and printed too, beside the act + verify + settle flow (pre_read off).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench._step_floors import DEFAULT_STEPS, LEAN_STEPS
from bench._throughput_report import report

# Each phase holds CONCURRENCY tasks in flight and counts the tasks that finish inside a window
# of WINDOW seconds: a sustained rate, not the time a burst takes to drain (a burst's last tasks
# run with few others in flight, and that tail weighs on slow and fast flows differently).
WINDOW = float(os.environ.get("LANDED_BENCH_TEMPORAL_SECONDS", "8"))
STAGGER = 1.0
# Each round runs every flow once, in a rotated order, so drift in the machine's other load
# and each phase's after-effects on the server (timers firing later) fall on all flows alike.
ROUNDS = int(os.environ.get("LANDED_BENCH_TEMPORAL_ROUNDS", "5"))
WARMUP = 40
# Each AgentTask start first asks the roles whether they can run and check it (a short
# LandedPreflight workflow; a positive answer is kept for a few seconds per act and probe
# shape). On by default, as every user's client has it; "off" measures the start without it.
ROLE_CHECK = os.environ.get("LANDED_BENCH_ROLE_CHECK", "on") != "off"
CONCURRENCY = int(os.environ.get("LANDED_BENCH_TEMPORAL_CONCURRENCY", "200"))
BASELINE_QUEUE = "bench-act-only"
# The confirmation read without its quiet interval: each flow and its same-step floor then
# differ by landed's own work, not by a timer.
CONFIRM = os.environ.get("LANDED_BENCH_CONFIRM_AFTER", "PT0S")
REPO = Path(__file__).resolve().parent.parent


def mark_spec(task_id: str, pre_read: bool, confirm_after: str | None = None) -> dict[str, Any]:
    """A task that marks itself in the marks table, read back by count; ``confirm_after`` (an
    ISO duration) sets the quiet interval before the confirmation read."""
    spec: dict[str, Any] = {
        "task_id": task_id,
        "owner": "bench",
        "outcome": "one mark row for this task in the marks table",
        "target": "bench-db: marks",
        "act": {"name": "bench.mark"},
        "pre_read": pre_read,
        "proof_plan": [
            {
                "action": "mark the task",
                "probe": {
                    "kind": "record",
                    "source": "bench-db",
                    "query": "select count(*) from marks where task = ?",
                    "params": [task_id],
                },
                "expect": {"type": "count", "value": 1},
            }
        ],
    }
    if confirm_after is not None:
        spec["durability"] = {"confirm_after": confirm_after}
    return spec


def bench_db(home: Path) -> Path:
    """The marks database, in a directory of its own (made here): the actor may write there,
    never beside the dev home's keys and ledger (landed.util.confine_policy)."""
    (home / "sor").mkdir(parents=True, exist_ok=True)
    return home / "sor" / "bench.db"


def mark_stack(home: Path, runner_env: dict[str, str]) -> Any:
    """``landed dev`` under ``home`` with the marks table: the actor writes it (bench.mark,
    bench.chaos_mark), the verifier reads it back as source bench-db."""
    from landed.dev.stack import DevStack

    db = bench_db(home)
    with sqlite3.connect(db) as conn:
        conn.execute("pragma journal_mode=wal")
        conn.execute("create table if not exists marks (task text)")
    dsn = f"sqlite:///{db}"
    return DevStack(
        home=home / ".landed",
        headless=True,
        cwd=REPO,
        env={
            "actor": {
                "LANDED_ACTOR_ACTS": "bench._bench_acts",
                "LANDED_ACTOR_CREDENTIALS": json.dumps({"bench-db": dsn}),
            },
            "verifier": {"LANDED_SOURCES__BENCH_DB__URL": dsn},
            "runner": runner_env,
        },
    )


async def _sustain(
    one: Callable[[int], Awaitable[bool]], pids: dict[str, int]
) -> tuple[int, int, int, dict[str, float]]:
    """Keep CONCURRENCY tasks in flight, measure WINDOW seconds of them, then let them end.

    The slots start spread over STAGGER seconds, and the window opens only once as many tasks as
    are in flight have finished (one full turn of the load), so the tasks that started together
    no longer finish together when it opens. Returns how many tasks finished inside the window,
    how many of those passed, how many failed at any time (ramp and drain included), and the
    CPU seconds each process in ``pids`` spent during the window.
    """
    loop = asyncio.get_running_loop()
    counter = iter(range(1 << 62))
    total = finished = passed = failed = 0
    opens = closes = float("inf")
    turned = asyncio.Event()
    cpu: dict[str, float] = {}

    async def slot(k: int) -> None:
        nonlocal total, finished, passed, failed
        await asyncio.sleep(STAGGER * k / CONCURRENCY)
        while loop.time() < closes:
            ok = await one(next(counter))
            now = loop.time()
            total += 1
            failed += not ok
            if opens <= now < closes:
                finished += 1
                passed += ok
            if total >= CONCURRENCY:
                turned.set()

    async def meter() -> None:
        nonlocal opens, closes
        await turned.wait()
        before = {name: _cpu_seconds(pid) for name, pid in pids.items()}
        opens = loop.time()
        closes = opens + WINDOW
        await asyncio.sleep(WINDOW)
        cpu.update({name: _cpu_seconds(pid) - before[name] for name, pid in pids.items()})

    await asyncio.gather(meter(), *(slot(k) for k in range(CONCURRENCY)))
    return finished, passed, failed, cpu


def _cpu_seconds(pid: int) -> float:
    """User + system CPU of a process (all its threads), from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def _measure(
    n: int, one: Callable[[int], Awaitable[bool]], pids: dict[str, int]
) -> tuple[float, int, dict[str, float]]:
    """Run n tasks with at most CONCURRENCY in flight.

    Returns the seconds taken, how many passed, and the CPU seconds spent by each process in
    ``pids`` (server, workers, this client): a figure other load on the machine does not
    inflate the way it inflates wall-clock throughput.
    """
    gate = asyncio.Semaphore(CONCURRENCY)

    async def run(i: int) -> bool:
        async with gate:
            return await one(i)

    cpu = {name: _cpu_seconds(pid) for name, pid in pids.items()}
    started = time.perf_counter()
    results = await asyncio.gather(*(run(i) for i in range(n)))
    seconds = time.perf_counter() - started
    used = {name: _cpu_seconds(pid) - cpu[name] for name, pid in pids.items()}
    return seconds, sum(results), used


def _serve_baseline() -> int:
    """The baseline's workflow worker, in its own process like the runner."""
    from temporalio.worker import Worker
    from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner, SandboxRestrictions

    from bench import _act_only, _step_floors
    from landed.temporal.plugin import connect, worker_identity

    # The runner shares landed's workflow module across runs (SANDBOX_PASSTHROUGH); the
    # baseline's modules are shared the same way, so the two differ only by what landed does.
    shared = SandboxRestrictions.default.with_passthrough_modules(
        _act_only.__name__, _step_floors.__name__
    )

    async def serve() -> None:
        client = await connect(identity=worker_identity("bench-baseline"))
        async with Worker(
            client,
            task_queue=BASELINE_QUEUE,
            workflows=[
                _act_only.ActOnly,
                _act_only.ActThenRead,
                _act_only.ActThenReadWithLocalSteps,
                _step_floors.LeanSteps,
                _step_floors.DefaultSteps,
            ],
            # Like the runner: local steps, and the gate polled on the workflow's own queue.
            activities=[_act_only.local_step, _step_floors.gate],
            workflow_runner=SandboxedWorkflowRunner(restrictions=shared),
        ):
            print(json.dumps({"event": "ready"}), flush=True)
            await asyncio.Event().wait()

    asyncio.run(serve())
    return 0


@contextlib.asynccontextmanager
async def bench_stack() -> AsyncIterator[tuple[Any, Any, subprocess.Popen[str]]]:
    """``landed dev`` with the marks table (the lean flow allowed: only the runner's operator
    can let a task skip its pre-read) and, beside it, the floors' own workflow worker; yields
    the stack, a landed client and the floors' worker process; stops both after."""
    home = Path(tempfile.mkdtemp(prefix="landed-bench-"))
    stack = mark_stack(home, {"LANDED_RUNNER_TASK_MAY_SKIP_PRE_READ": "true"})
    await stack.start()
    assert stack.server is not None
    env = {**os.environ, "TEMPORAL_ADDRESS": stack.server.address, "PYTHONUNBUFFERED": "1"}
    baseline = subprocess.Popen(
        [sys.executable, "-m", "bench.temporal_throughput", "--serve-baseline"],
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert baseline.stdout is not None
        line = await asyncio.to_thread(baseline.stdout.readline)
        if "ready" not in line:
            raise RuntimeError(f"the baseline worker did not start: {line!r}")
        yield stack, await stack.client(), baseline
    finally:
        baseline.terminate()
        baseline.wait(timeout=10)
        await asyncio.to_thread(stack.stop)
        shutil.rmtree(home, ignore_errors=True)


One = Callable[[int], Awaitable[bool]]
Make = Callable[[str], One]
#: Each flow: how to make its tasks (by a name prefix) and the processes whose CPU it counts.
Flows = dict[str, tuple[Make, dict[str, int]]]


def _flows(stack: Any, client: Any, baseline: subprocess.Popen[str], tag: str) -> Flows:
    """Act alone, the Temporal floors and landed's two flows, over the same stack. Task ids
    are ``{prefix}-{tag}-{i}``."""
    from landed.receipts.model import Receipt
    from landed.task.spec import TaskSpec
    from landed.task.start import start_search_attributes
    from landed.temporal.settings import DEFAULT_ACTOR_QUEUE, DEFAULT_VERIFIER_QUEUE

    temporal = client.temporal
    memo = {"actor_task_queue": DEFAULT_ACTOR_QUEUE, "verifier_task_queue": DEFAULT_VERIFIER_QUEUE}

    def plain(workflow: str, pre_read: bool = False, searchable: bool = False) -> Make:
        def make(prefix: str) -> One:
            async def one(i: int) -> bool:
                spec = TaskSpec.model_validate(mark_spec(f"{prefix}-{tag}-{i}", pre_read, CONFIRM))
                # The same-step floors start searchable as landed.Client starts a task.
                attrs = start_search_attributes(spec) if searchable else None
                result = await temporal.execute_workflow(
                    workflow,
                    spec,
                    id=spec.task_id,
                    task_queue=BASELINE_QUEUE,
                    memo=memo,
                    search_attributes=attrs,
                )
                return bool(result)

            return one

        return make

    def agent_task(pre_read: bool) -> Make:
        def make(prefix: str) -> One:
            async def one(i: int) -> bool:
                receipt: Receipt = await client.run(
                    mark_spec(f"{prefix}-{tag}-{i}", pre_read, CONFIRM)
                )
                return receipt.verdict == "verified"

            return one

        return make

    server = stack.server.proc.pid if stack.server.proc else os.getpid()
    roles = {role: proc.pid for role, proc in stack.roles.items()}
    base = {"server": server, "actor": roles["actor"], "workflow": baseline.pid}
    base["client"] = os.getpid()
    read = {**base, "verifier": roles["verifier"]}
    task = {**read, "workflow": roles["runner"]}
    return {
        "baseline": (plain("BenchActOnly"), base),
        "floor": (plain("BenchActThenRead"), read),
        "floor_la": (plain("BenchActThenReadWithLocalSteps"), read),
        "lean_floor": (plain("BenchLeanSteps", searchable=True), read),
        "lean": (agent_task(False), task),
        "default_floor": (plain("BenchDefaultSteps", True, searchable=True), read),
        "default": (agent_task(True), task),
    }


@dataclass
class Tally:
    """What the rounds measured, per flow: seconds in window, tasks finished in it, how many
    of those passed, failures at any time, CPU seconds by process, each round's rates, and
    the history events of one task."""

    seconds: dict[str, float]
    done: dict[str, int]
    passed: dict[str, int]
    failed: dict[str, int]
    cpu: dict[str, dict[str, float]]
    round_rates: list[dict[str, float]] = field(default_factory=list)
    events: dict[str, int] = field(default_factory=dict)
    steps: dict[str, tuple[str, ...]] = field(default_factory=dict)

    @classmethod
    def of(cls, flows: Flows) -> Tally:
        zero = dict.fromkeys(flows, 0)
        return cls(dict.fromkeys(flows, 0.0), {**zero}, {**zero}, {**zero}, {n: {} for n in flows})


async def _rounds(flows: Flows) -> Tally:
    """ROUNDS rounds; each measures every flow for WINDOW seconds, in a rotated order."""
    tally = Tally.of(flows)
    order = list(flows)
    for r in range(ROUNDS):
        rates: dict[str, float] = {}
        for name in order[r % len(order) :] + order[: r % len(order)]:
            make, pids = flows[name]
            finished, ok, bad, used = await _sustain(make(f"{name}-{r}"), pids)
            tally.seconds[name] += WINDOW
            tally.passed[name] += ok
            tally.done[name] += finished
            tally.failed[name] += bad
            rates[name] = finished / WINDOW
            for proc, sec in used.items():
                tally.cpu[name][proc] = tally.cpu[name].get(proc, 0.0) + sec
        tally.round_rates.append(rates)
    return tally


async def _count_events(temporal: Any, flows: Flows, tag: str) -> dict[str, int]:
    """How many history events one task of each flow records (one run each, after the rounds)."""
    counts: dict[str, int] = {}
    for name, (make, _) in flows.items():
        await make(f"events-{name}")(0)
        history = await temporal.get_workflow_handle(f"events-{name}-{tag}-0").fetch_history()
        counts[name] = len(history.events)
    return counts


async def _run() -> bool:
    async with bench_stack() as (stack, client, baseline):
        if not ROLE_CHECK:
            from landed.temporal.client import Client

            client = Client(client.temporal, task_queue=client.task_queue, check_roles=False)
        print(f"  role check before each start: {'on' if ROLE_CHECK else 'off'}", flush=True)
        tag = uuid.uuid4().hex[:6]
        flows = _flows(stack, client, baseline, tag)
        for name in ("baseline", "default"):
            make, pids = flows[name]
            await _measure(WARMUP, make(f"warm-{name}"), pids)
        tally = await _rounds(flows)
        tally.events = await _count_events(client.temporal, flows, tag)
    tally.steps = {"lean": LEAN_STEPS, "default": DEFAULT_STEPS}
    return report(tally, ROUNDS, WINDOW, CONCURRENCY)


def main(argv: list[str] | None = None) -> int:
    args = list(argv or [])
    if args[:1] == ["--serve-baseline"]:
        return _serve_baseline()
    return 0 if asyncio.run(_run()) else 1


if __name__ == "__main__":
    status = main(sys.argv[1:])
    sys.stdout.flush()
    os._exit(status)  # the SDK can crash in interpreter teardown (sdk-python#300)
