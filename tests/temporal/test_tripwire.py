"""Tripwires on the time-skipping server (its timers are the silence rule): a loop that stops
landing trips, exactly one repair task runs and is verified, and the loop is healthy again."""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path
from typing import Any

import pytest
from helpers.roles import Roles, run_roles
from helpers.sor import make_rows_db, rows_task
from helpers.wait import until
from landed.workflows.tripwire import Tripwire
from temporalio.client import WorkflowHandle
from temporalio.service import RPCError
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Replayer

from landed.task.loops import LoopSpec, loop_task, repair_workflow_id, tripwire_id
from landed.task.names import SETTLED_SIGNAL
from landed.task.tripwire import Note, TripwireState
from landed.temporal.loops import LoopExists, create_loop, loop_state
from landed.temporal.plugin import landed_plugin


def declare(name: str, db: Path, **extra: Any) -> LoopSpec:
    template = rows_task("x", db, expect=1, batch=f"{name}-run", write=0)
    del template["task_id"]
    repair = rows_task("x", db, expect=1, batch=f"{name}-fix", write=1)
    return LoopSpec.model_validate(
        {
            "name": name,
            "every": "PT15M",
            "task": template,
            "repair": {
                "outcome": "the loop's feed is flowing again",
                "act": repair["act"],
                "proof_plan": repair["proof_plan"],
                "backoff": "PT1M",
            },
        }
        | extra
    )


def roles_for(env: WorkflowEnvironment, tmp_path: Path, db: Path) -> Any:
    return run_roles(
        env.client.service_client.config.target_host,
        tmp_path,
        credentials={"rows-db": f"sqlite:///{db}"},
        sources={"rows-db": {"url": f"sqlite:///{db}"}},
    )


async def repair_handle(roles: Roles, loop: str, trip: int) -> WorkflowHandle[Any, Any]:
    # Awaited through the roles' own client, not env.client: the server skips time only when
    # a test asks it to (env.sleep), never while a runner's local activity is in flight.
    handle = roles.temporal.get_workflow_handle(f"{repair_workflow_id(loop)}-{trip}-1")

    async def started() -> bool:
        try:
            await handle.describe()
        except RPCError:
            return False
        return True

    await until(f"repair-{loop} started", started)
    return handle


async def state_of(roles: Roles, loop: str, phase: str) -> TripwireState:
    async def reached() -> TripwireState | None:
        state = await loop_state(roles.temporal, loop)
        return state if state.phase == phase else None

    return await until(f"tripwire {loop} {phase}", reached)


async def test_a_loop_that_stops_landing_trips_one_repair_that_rearms_it(
    temporal_time_skipping: WorkflowEnvironment, tmp_path: Path
) -> None:
    env = temporal_time_skipping
    db = make_rows_db(tmp_path / "rows.db")
    name = f"feed-{uuid.uuid4().hex[:6]}"
    spec = declare(name, db)
    async with roles_for(env, tmp_path, db) as roles:
        queue = roles.queues["runner"]
        await create_loop(roles.temporal, queue, spec, schedule=False)
        with pytest.raises(LoopExists, match="landed loop delete"):
            await create_loop(roles.temporal, queue, spec, schedule=False)
        runs = []
        for i in range(3):  # claims done, writes nothing: green, never proven
            handle = await roles.client.start(loop_task(spec, f"{name}@{i}"))
            runs.append((await handle.result()).model_dump(mode="json"))
        assert [r["verdict"] for r in runs] != ["verified"] * 3
        assert all(r["landed"]["loop"] == name for r in runs)
        repair = await repair_handle(roles, name, 1)
        receipt = await repair.result()
        assert (receipt["task_id"], receipt["verdict"]) == (f"repair-{name}-1-1", "verified")
        state = await state_of(roles, name, "healthy")
        assert state.repairs_verified == 1
        (tripped,) = state.trips
        assert tripped.rule == "3 not-done in a row"
        assert tripped.receipts == [f"{name}@{i}#1" for i in range(3)]
        assert tripped.repair_task_id == f"repair-{name}-1-1"
        # Silence: no verified settlement for cadence x 2 trips again, on its timer.
        await env.sleep(31 * 60)
        second = await state_of(roles, name, "healthy")
        assert second.last_trip is not None and second.last_trip.rule.startswith("no verified")
        await (await repair_handle(roles, name, 2)).result()
        await until("second repair verified", lambda: _verified(roles, name, 2))
        ledger = await roles.ledger()
        repairs = [r.task_id for r in await ledger.board() if r.task_id.startswith("repair-")]
        await ledger.close()
        assert sorted(repairs) == [f"repair-{name}-1-1", f"repair-{name}-2-1"]
        tw = roles.temporal.get_workflow_handle(tripwire_id(name))
        history = await tw.fetch_history()
    replayer = Replayer(workflows=[Tripwire], plugins=[landed_plugin()])
    result = await replayer.replay_workflow(history, raise_on_replay_failure=False)
    assert result.replay_failure is None


async def _verified(roles: Roles, loop: str, n: int) -> bool:
    state = await loop_state(roles.temporal, loop)
    return state.phase == "healthy" and state.repairs_verified == n


async def test_trips_signalled_at_once_leave_exactly_one_repair(
    temporal_time_skipping: WorkflowEnvironment, tmp_path: Path
) -> None:
    """Many not-done settlements signalled at once (each twice): one trip, one repair task."""
    env = temporal_time_skipping
    db = make_rows_db(tmp_path / "rows.db")
    name = f"burst-{uuid.uuid4().hex[:6]}"
    spec = declare(name, db)
    async with roles_for(env, tmp_path, db) as roles:
        await create_loop(roles.temporal, roles.queues["runner"], spec, schedule=False)
        tw = roles.temporal.get_workflow_handle(tripwire_id(name))
        notes = [Note(task_id=f"{name}@{i}", verdict="failed") for i in range(8)]
        await asyncio.gather(*(tw.signal(SETTLED_SIGNAL, n) for n in notes + notes))
        repair = await repair_handle(roles, name, 1)
        assert (await repair.result())["verdict"] == "verified"
        state = await state_of(roles, name, "healthy")
        assert len(state.trips) == 1 and state.repairs_verified == 1
        ledger = await roles.ledger()
        repairs = [r.task_id for r in await ledger.board() if r.task_id.startswith("repair-")]
        await ledger.close()
        assert repairs == [f"repair-{name}-1-1"]
