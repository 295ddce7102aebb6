"""Scale-out: N processes of each worker role against one Temporal server, and which role to add.

``python -m bench scale_out`` (or ``python -m bench.scale_out --procs 1,2,4 --tasks 200``) starts
Temporal's dev server once (loopback, SQLite in WAL mode, as ``landed dev``), then runs steps:
every role at N processes for each N (N=1 always runs first: the baseline), then, unless
``--no-each``, one role at the largest N with the others at 1; ``--rounds`` repeats them in a
rotated order and prints the median of each step. Each step submits the same fixed
batch of marks tasks (the throughput bench's: one row written by the actor, read back by the
verifier, settled by the runner) with at most ``--concurrency`` in flight, and prints the rate,
its ratio to N=1 from the same run, each role's CPU per task summed over its processes
(/proc/PID/stat), the server's CPU per task and its share of the bench's CPU, and how busy the
whole machine was (other load on a shared machine shows there). Every task must settle verified
exactly once (ledger row, one act write): exit 0, else 1; 2 for bad arguments.

``--temporal env`` runs the roles against an existing Temporal (Temporal's environment
configuration: TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE, TEMPORAL_TLS_*, TEMPORAL_API_KEY...) instead
of a dev server; LANDED_RUNNER_LEDGER_URL picks the ledger (PostgreSQL for a fleet).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import shutil
import sys
import tempfile
import time
import uuid
from collections.abc import Awaitable
from dataclasses import asdict
from pathlib import Path
from typing import Any

from bench._scale_fleet import ROLES, Fleet, dev_server
from bench._scale_report import Step, render, summary, verdicts
from bench.temporal_throughput import bench_db, mark_spec, mark_stack

PROCS = os.environ.get("LANDED_BENCH_SCALE_PROCS", "1,2,4")
TASKS = int(os.environ.get("LANDED_BENCH_SCALE_TASKS", "200"))
CONCURRENCY = int(os.environ.get("LANDED_BENCH_SCALE_CONCURRENCY", "50"))
# Each round runs every step once; the ratios pair each step with the N=1 step of its own round,
# and the summary takes the median per step (a shared machine's load comes and goes).
ROUNDS = int(os.environ.get("LANDED_BENCH_SCALE_ROUNDS", "1"))
# A task not settled by then is counted as not verified, and the bench goes on to its report.
STEP_LIMIT_S = float(os.environ.get("LANDED_BENCH_SCALE_LIMIT_S", "600"))


def _args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.scale_out", description=__doc__)
    parser.add_argument("--procs", default=PROCS, help="processes per role, e.g. 1,2,4")
    parser.add_argument("--tasks", type=int, default=TASKS, help="tasks per step")
    parser.add_argument("--concurrency", type=int, default=CONCURRENCY, help="tasks in flight")
    parser.add_argument("--rounds", type=int, default=ROUNDS, help="times to run every step")
    parser.add_argument("--no-each", action="store_true", help="skip one-role-at-a-time steps")
    parser.add_argument("--temporal", choices=("dev", "env"), default="dev")
    parser.add_argument("--json", action="store_true", help="print one JSON report")
    args = parser.parse_args(argv)
    try:
        procs = sorted({1, *(int(p) for p in args.procs.split(",") if p.strip())})
    except ValueError:
        parser.error(f"--procs {args.procs!r}: give whole numbers separated by commas, e.g. 1,2,4")
    if min(procs[0], args.tasks, args.concurrency, args.rounds) < 1:
        parser.error("--procs, --tasks, --concurrency and --rounds must be at least 1")
    args.procs = procs
    return args


def _plan(procs: list[int], each: bool) -> list[tuple[str, dict[str, int]]]:
    steps = [(f"all x{n}", dict.fromkeys(ROLES, n)) for n in procs]
    if each and procs[-1] > 1:
        top = procs[-1]
        steps += [(f"{role} x{top}", {**dict.fromkeys(ROLES, 1), role: top}) for role in ROLES]
    return steps


def _spec(task_id: str) -> dict[str, Any]:
    # confirm_after 0: the second read still runs, but no quiet interval holds the tasks in
    # flight, which would cap the rate at concurrency / interval whatever the processes do.
    return {**mark_spec(task_id, True), "durability": {"confirm_after": 0}}


async def _batch(client: Any, ids: list[str], concurrency: int) -> dict[str, str]:
    """Run every task, at most ``concurrency`` at once; the verdict (or error name) of each."""
    slots = asyncio.Semaphore(concurrency)
    outcome: dict[str, str] = {}

    async def one(task_id: str) -> None:
        async with slots:
            try:
                outcome[task_id] = str((await client.run(_spec(task_id))).verdict)
            except Exception as exc:  # counted as not verified, never hidden
                outcome[task_id] = f"error: {type(exc).__name__}: {exc}"

    # The tasks without an answer by then count as not verified ("never answered").
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(asyncio.gather(*(one(i) for i in ids)), STEP_LIMIT_S)
    return outcome


async def _watched(fleet: Fleet, batch: Awaitable[dict[str, str]]) -> dict[str, str]:
    """``batch``, stopped with the reason as soon as a role process exits (its tasks would only
    wait out the step's limit)."""

    async def watch() -> None:
        while (dead := fleet.dead()) is None:
            await asyncio.sleep(1.0)
        raise RuntimeError(dead)

    watcher = asyncio.ensure_future(watch())
    running = asyncio.ensure_future(batch)
    try:
        await asyncio.wait({watcher, running}, return_when=asyncio.FIRST_COMPLETED)
        if watcher.done():
            watcher.result()  # raises: a role process exited
        return await running
    finally:
        for task in (watcher, running):
            task.cancel()
        await asyncio.gather(watcher, running, return_exceptions=True)


async def _step(
    fleet: Fleet, client: Any, server_pid: int | None, name: str, counts: dict[str, int], args: Any
) -> Step:
    from bench._scale_fleet import cpu_seconds, machine_cpu

    await fleet.scale(counts)
    tag = f"scale-{uuid.uuid4().hex[:6]}"
    # Warm every new process (imports, connections, sandbox) before the window opens.
    warm = [f"{tag}-warm-{i}" for i in range(4 * sum(counts.values()))]
    await _watched(fleet, _batch(client, warm, 50))
    pids = {**fleet.pids(), "client": [os.getpid()]}
    if server_pid is not None:
        pids["server"] = [server_pid]
    before = {key: [cpu_seconds(p) for p in ps] for key, ps in pids.items()}
    busy0, total0 = machine_cpu()
    started = time.time()
    clock = time.perf_counter()
    ids = [f"{tag}-{i}" for i in range(args.tasks)]
    outcome = await _watched(fleet, _batch(client, ids, args.concurrency))
    seconds = time.perf_counter() - clock
    busy1, total1 = machine_cpu()
    cpu = {key: sum(cpu_seconds(p) for p in ps) - sum(before[key]) for key, ps in pids.items()}
    settled = await verdicts(fleet.ledger_url(), bench_db(fleet.stack.home.parent), ids)
    machine = (busy1 - busy0, total1 - total0)
    return Step.of(name, counts, outcome, settled, seconds, cpu, machine, started, pids)


async def _run(args: Any) -> tuple[list[Step], dict[str, Any]]:
    home = Path(tempfile.mkdtemp(prefix="landed-bench-scale-"))
    stack = mark_stack(home, {})
    server = dev_server(stack.home)
    stack.server = server
    fleet = Fleet(stack, external=args.temporal == "env")
    steps: list[Step] = []
    try:
        if not fleet.external:
            await asyncio.to_thread(server.start)
            client = await stack.client()
        else:
            from landed.temporal.client import Client
            from landed.temporal.plugin import connect, worker_identity

            client = Client(await connect(identity=worker_identity("bench-client")))
        server_pid = server.proc.pid if server.proc is not None else None
        plan = _plan(args.procs, not args.no_each)
        for r in range(args.rounds):
            # Rotated per round, so the machine's drift does not always fall on the same step.
            mine = [
                await _step(fleet, client, server_pid, name, counts, args)
                for name, counts in plan[r % len(plan) :] + plan[: r % len(plan)]
            ]
            base = next(step for step in mine if step.name == plan[0][0])
            for step in mine:
                step.round, step.ratio_to_n1 = r, round(step.rate / base.rate, 3)
            if not args.json:
                print(render(mine, header=not steps), flush=True)
            steps += mine
    finally:
        await asyncio.to_thread(fleet.stop)
        await asyncio.to_thread(server.stop)
        shutil.rmtree(home, ignore_errors=True)
    where = os.environ.get("TEMPORAL_ADDRESS", "env config") if fleet.external else "dev server"
    return steps, {"temporal": where, "tasks": args.tasks, "concurrency": args.concurrency}


def main(argv: list[str] | None = None) -> int:
    args = _args(list(argv or []))
    if not args.json:
        print(
            f"scale-out: {args.tasks} tasks per step, {args.concurrency} in flight, "
            f"{os.cpu_count()} cores, Temporal: {args.temporal}",
            flush=True,
        )
    try:
        steps, run = asyncio.run(_run(args))
    except (RuntimeError, OSError) as exc:  # a role or the server failed: said, not hidden
        print(f"scale_out stopped, every process it started is stopped: {exc}", file=sys.stderr)
        return 1
    report = {"bench": "scale_out", "cores": os.cpu_count(), **run, **summary(steps)}
    if args.json:
        report["steps"] = [asdict(step) for step in steps]
        print(json.dumps(report, indent=2))
    else:
        for line in report["lines"]:
            print(line)
    return 0 if report["all_settled_verified"] else 1


if __name__ == "__main__":
    status = main(sys.argv[1:])
    sys.stdout.flush()
    os._exit(status)  # the SDK can crash in interpreter teardown (sdk-python#300)
