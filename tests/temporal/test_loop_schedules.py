"""Loops on Temporal Schedules, on the dev server (the time-skipping test server has no
Schedules): every scheduled time is one task, whether the Schedule fires it once, catches it
up twice, or the server restarts in between."""

from __future__ import annotations

import sqlite3
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

from helpers.ports import steady_port
from helpers.roles import Roles, run_roles
from helpers.sor import make_rows_db, rows_task
from helpers.stuck import open_workflows
from helpers.wait import until
from temporalio.client import Client, ScheduleBackfill, ScheduleOverlapPolicy

from landed.dev.server import DevServer
from landed.loops.spec import LoopSpec, schedule_id
from landed.receipts.model import Receipt
from landed.task.names import LOOP_RUN_WORKFLOW
from landed.temporal.loops import delete_loop, describe_loop, loop_state


def _acts(db: Path, loop: str) -> dict[str, int]:
    with sqlite3.connect(db) as conn:
        rows = conn.execute(
            "select task, count(*) from act_log where task like ? group by task", [f"{loop}@%"]
        ).fetchall()
    return {str(t): int(n) for t, n in rows}


async def test_each_scheduled_time_runs_once_across_catch_up_and_a_server_restart(
    tmp_path: Path,
) -> None:
    db = make_rows_db(tmp_path / "rows.db")
    name = f"sched-{uuid.uuid4().hex[:6]}"
    template = rows_task("x", db, expect=1, batch=f"{name}-run", write=1)
    del template["task_id"]
    spec = LoopSpec.model_validate({"name": name, "every": "PT1M", "task": template})
    port = steady_port()
    server = DevServer(
        headless=True, port=port, db_file=tmp_path / "temporal.db", log_file=tmp_path / "t.log"
    ).start()
    try:
        async with run_roles(
            server.address,
            tmp_path,
            credentials={"rows-db": f"sqlite:///{db}"},
            sources={"rows-db": {"url": f"sqlite:///{db}"}},
        ) as roles:
            # Created paused: the state is part of the Schedule's creation. A pause asked for
            # after it is a signal to the Schedule, which a server stopped soon after may not
            # have applied yet (seen here once: the Schedule ran on its own after the restart).
            await roles.client.create_loop(spec, paused=True)
            schedule = roles.temporal.get_schedule_handle(schedule_id(name))
            assert (await schedule.describe()).schedule.state.paused
            start = datetime.now(UTC).replace(second=0, microsecond=0) - timedelta(minutes=10)
            window = ScheduleBackfill(
                start_at=start,
                end_at=start + timedelta(minutes=2, seconds=30),
                # One run at a time, as a loop's own policy runs them: every run writes a row
                # to the same batch and proves a change of one, which two overlapping runs
                # would each see as two (duplicated).
                overlap=ScheduleOverlapPolicy.BUFFER_ALL,
            )
            # The same three scheduled times, asked for twice (a catch-up and a double fire).
            await schedule.backfill(window, window)
            acts = await until(
                "three scheduled runs acted",
                lambda: len(_acts(db, name)) >= 3 and _acts(db, name),
                timeout=60,
            )
            # The server stops mid-loop and comes back on its own database.
            server.stop()
            server.start()
            await schedule.backfill(window)
            # Wait on the ledger, not on the tripwire's query: with a workflow cache of 0 (every
            # activation replayed) each query takes the runner's one cache slot, and a query every
            # few milliseconds evicts a task whose settle is still running, again and again.
            mine = await until(
                "three receipts settled",
                lambda: _receipts(roles, name),
                timeout=60,
                every=0.5,
            )
            try:
                await until(
                    "loop tripwire answers",
                    lambda: _answers(roles.temporal, name),
                    timeout=30,
                    every=0.5,
                )
            except AssertionError as err:
                raise AssertionError(f"{err}\n{await open_workflows(roles.temporal)}") from None
            described = await describe_loop(roles.temporal, name)
            assert described["paused"] is True, described
            acts = _acts(db, name)
            assert sorted(acts) == sorted(
                f"{name}@{(start + timedelta(minutes=i)).strftime('%Y%m%dT%H%M%SZ')}"
                for i in range(3)
            )
            assert set(acts.values()) == {1}, acts  # none doubled
            assert {r.verdict for r in mine} == {"verified"} and len(mine) == 3
            assert all(r.landed is not None and r.landed.loop == name for r in mine)
            state = await loop_state(roles.temporal, name)
            assert state.phase == "healthy" and len(state.seen) == 3
            # Each scheduled run ended only once its task had: the loop's overlap policy holds
            # the tasks, not just the runs that start them.
            for run_closed, task_closed in await _closings(roles.temporal, name):
                assert run_closed >= task_closed
            await delete_loop(roles.temporal, name)
    finally:
        server.stop()


async def _receipts(roles: Roles, name: str) -> list[Receipt]:
    ledger = await roles.ledger()
    try:
        mine = [r for r in await ledger.board() if r.task_id.startswith(f"{name}@")]
    finally:
        await ledger.close()
    return mine if len(mine) >= 3 else []


async def _answers(temporal: object, name: str) -> bool:
    try:
        state = await loop_state(temporal, name)  # type: ignore[arg-type]
    except Exception:
        return False
    return len(state.seen) >= 3


async def _closings(temporal: Client, name: str) -> list[tuple[datetime, datetime]]:
    """(when the scheduled run closed, when its task closed) for each of the loop's scheduled
    runs, a catch-up's and a double fire's included, waiting for each to close."""
    runs = [
        w
        async for w in temporal.list_workflows(f"WorkflowType = '{LOOP_RUN_WORKFLOW}'")
        if w.id.startswith(f"looprun-{name}-")
    ]
    out = []
    tasks = set()
    for run in runs:
        handle = temporal.get_workflow_handle(run.id, run_id=run.run_id)
        task_id = await handle.result()
        tasks.add(task_id)
        closed = (await handle.describe()).close_time
        task_closed = (await temporal.get_workflow_handle(task_id).describe()).close_time
        assert closed is not None and task_closed is not None, (run.id, task_id)
        out.append((closed, task_closed))
    assert len(tasks) == 3, tasks  # a catch-up or double fire ran again, no new task
    return out
