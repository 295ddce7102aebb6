"""Tripwires on the time-skipping server (its timers are the silence rule): a loop that stops
landing trips, exactly one repair task runs and is verified, and the loop is healthy again."""

from __future__ import annotations

import asyncio
import json
import os
import sqlite3
import uuid
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from helpers.roles import Roles, run_roles
from helpers.scorecard import settled
from helpers.sor import make_rows_db, rows_task
from helpers.wait import skip, until
from temporalio.client import WorkflowHandle, WorkflowHistory
from temporalio.service import RPCError
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Replayer
from typer.testing import CliRunner

from landed.cli import app
from landed.ledger.factory import open_ledger
from landed.loops.spec import LoopSpec, loop_task, repair_workflow_id, tripwire_id
from landed.loops.tripwire import Note, TripwireState
from landed.task.names import SETTLED_SIGNAL, STOP_SIGNAL
from landed.temporal.loops import (
    LoopExists,
    UnknownLoop,
    create_loop,
    loop_state,
    repair_done,
)
from landed.temporal.plugin import landed_plugin
from landed.workflows.tripwire import Tripwire

HISTORIES = Path(__file__).parent / "histories" / "tripwire"


def _record(name: str, history: WorkflowHistory) -> None:
    """With LANDED_RECORD_HISTORIES=1, keep ``history`` as a committed fixture (see
    test_durable._record): a later change to the tripwire must still replay it
    (tests/workflows/test_versions.py replays every committed history)."""
    if os.environ.get("LANDED_RECORD_HISTORIES") == "1":
        HISTORIES.mkdir(parents=True, exist_ok=True)
        text = json.dumps(json.loads(history.to_json()), indent=1) + "\n"
        (HISTORIES / f"{name}.json").write_text(text)


def declare(name: str, db: Path, *, write: int = 0, **extra: Any) -> LoopSpec:
    template = rows_task("x", db, expect=1, batch=f"{name}-run", write=write)
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


def roles_for(env: WorkflowEnvironment, tmp_path: Path, db: Path, **runner: Any) -> Any:
    return run_roles(
        env.client.service_client.config.target_host,
        tmp_path,
        credentials={"rows-db": f"sqlite:///{db}"},
        sources={"rows-db": {"url": f"sqlite:///{db}"}},
        runner=runner or None,
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


async def state_of(
    roles: Roles, loop: str, phase: str, also: Callable[[TripwireState], bool] = lambda s: True
) -> TripwireState:
    async def reached() -> TripwireState | None:
        try:
            state = await loop_state(roles.temporal, loop)
        except RPCError:  # the test server drops a query now and then: asked again
            return None
        return state if state.phase == phase and also(state) else None

    # Every half second: each query of a workflow the runner does not cache (cache of 0) takes
    # its one cache slot, and asked every few milliseconds it evicts a task mid-settle.
    return await until(f"tripwire {loop} {phase}", reached, every=0.5)


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
        await skip(env, timedelta(minutes=31))
        second = await state_of(roles, name, "healthy")
        assert second.last_trip is not None and second.last_trip.rule.startswith("no verified")
        await (await repair_handle(roles, name, 2)).result()
        await until("second repair verified", lambda: _verified(roles, name, 2))
        ledger = await roles.ledger()
        repairs = [r.task_id for r in await ledger.board() if r.task_id.startswith("repair-")]
        events = await ledger.events(name)
        await ledger.close()
        assert sorted(repairs) == [f"repair-{name}-1-1", f"repair-{name}-2-1"]
        # Each trip is an append-only ledger event: its rule, receipts and repair task id.
        assert [(e.key, e.kind, e.body["repair_task_id"]) for e in reversed(events)] == [
            (f"trip:{name}:1", "tripwire.trip", f"repair-{name}-1-1"),
            (f"trip:{name}:2", "tripwire.trip", f"repair-{name}-2-1"),
        ]
        assert events[-1].body["rule"] == "3 not-done in a row"
        assert events[-1].body["receipts"] == [f"{name}@{i}#1" for i in range(3)]
        assert events[0].body["rule"].startswith("no verified")
        tw = roles.temporal.get_workflow_handle(tripwire_id(name))
        history = await tw.fetch_history()
    _record("trip_repair_silence", history)
    replayer = Replayer(workflows=[Tripwire], plugins=[landed_plugin()])
    result = await replayer.replay_workflow(history, raise_on_replay_failure=False)
    assert result.replay_failure is None


async def test_a_tripwire_started_again_does_not_trip_on_runs_a_trip_already_judged(
    temporal_time_skipping: WorkflowEnvironment, tmp_path: Path
) -> None:
    """The loop trips and is repaired; its tripwire stops (as when the loop is deleted) and a
    later run's settle starts it again: its catch-up from the ledger must not count the three
    not-done runs of the recorded trip once more (a second trip, with nothing new to say)."""
    env = temporal_time_skipping
    db = make_rows_db(tmp_path / "rows.db")
    name = f"again-{uuid.uuid4().hex[:6]}"
    spec = declare(name, db)
    async with roles_for(env, tmp_path, db) as roles:
        await create_loop(roles.temporal, roles.queues["runner"], spec, schedule=False)
        for i in range(3):
            await (await roles.client.start(loop_task(spec, f"{name}@{i}"))).result()
        await (await repair_handle(roles, name, 1)).result()
        await state_of(roles, name, "healthy")
        # Stopped as `landed loop delete` stops it (the test server has no Schedules to delete).
        tw = roles.temporal.get_workflow_handle(tripwire_id(name))
        await tw.signal(STOP_SIGNAL)
        await tw.result()
        fixed = declare(name, db, write=1)
        after = await (await roles.client.start(loop_task(fixed, f"{name}@3"))).result()

        async def caught_up() -> TripwireState | None:
            try:
                state = await loop_state(roles.temporal, name)
            except UnknownLoop:
                return None
            return state if any(n.task_id == f"{name}@3" for n in state.recent) else None

        state = await until("the tripwire started again and read the ledger", caught_up, every=0.5)
        ledger = await roles.ledger()
        events = await ledger.events(name)
        await ledger.close()
    assert after.verdict == "verified"
    assert state.phase == "healthy"
    assert [e.key for e in events] == [f"trip:{name}:1"]


async def test_a_verified_run_whose_signal_was_lost_holds_off_the_silence_trip(
    temporal_time_skipping: WorkflowEnvironment, tmp_path: Path
) -> None:
    """A runner that dies with its signals still gathered loses them; the ledger keeps the
    receipt. Before silence trips the tripwire reads the ledger: a verified run it was never
    told of moves the deadline on, and silence trips only once the ledger agrees."""
    env = temporal_time_skipping
    db = make_rows_db(tmp_path / "rows.db")
    name = f"lost-{uuid.uuid4().hex[:6]}"
    spec = declare(name, db)  # every 15 minutes: silence after 30
    async with roles_for(env, tmp_path, db) as roles:
        await create_loop(roles.temporal, roles.queues["runner"], spec, schedule=False)
        armed = (await state_of(roles, name, "healthy")).armed_at
        assert armed is not None
        ran = armed + timedelta(minutes=20)
        ledger = await open_ledger(roles.ledger_url)  # writable: as the runner that settled it
        await ledger.append(settled(f"{name}@0", loop=name).model_copy(update={"settled_at": ran}))
        await ledger.close()
        await skip(env, timedelta(minutes=31))
        state = await state_of(roles, name, "healthy", lambda s: s.last_verified_at is not None)
        assert state.trips == [] and state.last_verified_at == ran
        # 30 minutes after the lost run: silence, as the ledger says
        await skip(env, timedelta(minutes=20))
        state = await state_of(roles, name, "healthy", lambda s: s.repairs_verified == 1)
        assert state.last_trip is not None and state.last_trip.rule.startswith("no verified")
        assert state.last_trip.at >= ran + timedelta(minutes=30)


async def test_silence_trips_when_the_ledger_cannot_be_read_before_it(
    temporal_time_skipping: WorkflowEnvironment, tmp_path: Path
) -> None:
    """The read before a silence trip is bounded: a ledger that cannot be read cannot say the
    loop ran, so silence trips (fail closed) instead of waiting on the ledger."""
    env = temporal_time_skipping
    db = make_rows_db(tmp_path / "rows.db")
    name = f"blind-{uuid.uuid4().hex[:6]}"
    spec = declare(name, db).model_copy(update={"repair": None})  # trips hold for a person
    async with roles_for(env, tmp_path, db) as roles:
        await create_loop(roles.temporal, roles.queues["runner"], spec, schedule=False)
        await state_of(roles, name, "healthy")
        path = roles.ledger_url.removeprefix("sqlite:///")
        with sqlite3.connect(path) as conn:  # the receipts cannot be read any more
            conn.execute("ALTER TABLE landed_receipts RENAME TO landed_receipts_gone")
        conn.close()
        await skip(env, timedelta(minutes=31))
        state = await state_of(roles, name, "held")
        assert state.last_trip is not None and state.last_trip.rule.startswith("no verified")


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
        await asyncio.gather(*(tw.signal(SETTLED_SIGNAL, [n]) for n in notes + notes))
        repair = await repair_handle(roles, name, 1)
        assert (await repair.result())["verdict"] == "verified"
        state = await state_of(roles, name, "healthy")
        assert len(state.trips) == 1 and state.repairs_verified == 1
        ledger = await roles.ledger()
        repairs = [r.task_id for r in await ledger.board() if r.task_id.startswith("repair-")]
        events = await ledger.events(name)
        await ledger.close()
        assert repairs == [f"repair-{name}-1-1"]
        assert [e.key for e in events] == [f"trip:{name}:1"]
        # `landed loop describe` shows the trip as the ledger recorded it, beside the query's.
        args = ["loop", "describe", name, "--json", "--ledger", roles.ledger_url]
        args += ["--address", env.client.service_client.config.target_host]
        shown = await asyncio.to_thread(CliRunner().invoke, app, args)
        assert shown.exit_code == 0, shown.output
        described = json.loads(shown.stdout)
        assert described["recorded_trip"]["event"] == f"trip:{name}:1"
        assert described["recorded_trip"]["repair_task_id"] == f"repair-{name}-1-1"
        assert described["tripwire"]["trips"][0]["rule"] == described["recorded_trip"]["rule"]


async def test_a_repair_that_does_not_land_is_retried_then_held_until_a_person_fixes_it(
    temporal_time_skipping: WorkflowEnvironment, tmp_path: Path
) -> None:
    """The repair's own act lands nothing: retried after its backoff up to its cap, then held;
    `landed repair done` reads the loop back, and only a read-back that passes re-arms it."""
    env = temporal_time_skipping
    db = make_rows_db(tmp_path / "rows.db")
    name = f"stuck-{uuid.uuid4().hex[:6]}"
    spec = declare(name, db, tripwire={"not_done_in_a_row": 1})
    assert spec.repair is not None and spec.repair.act is not None
    spec.repair.act.input["write"] = 0  # the repair's act lands nothing either
    spec.repair.attempts = 2
    # A person's repair is read back without a before-state (made before its task started).
    async with roles_for(env, tmp_path, db, task_may_skip_pre_read=True) as roles:
        await create_loop(roles.temporal, roles.queues["runner"], spec, schedule=False)
        await roles.client.run(loop_task(spec, f"{name}@0"))
        first = await repair_handle(roles, name, 1)
        assert (await first.result())["verdict"] != "verified"
        # The repair's verdict reaches the tripwire (signalled just after it settles), then
        # the backoff passes: the second repair starts on the tripwire's timer.
        await state_of(roles, name, "repairing", lambda s: s.retry_at is not None)
        await env.sleep(61)
        second = roles.temporal.get_workflow_handle(f"repair-{name}-1-2")
        await until("second repair started", lambda: _started(second))
        assert (await second.result())["verdict"] != "verified"
        held = await state_of(roles, name, "held")
        assert held.repair_attempt == 2
        ledger = await roles.ledger()
        events = await ledger.events(name)
        await ledger.close()
        # The hold is in the ledger too, for the exporter: held for a person, not open.
        assert [(e.key, e.kind) for e in events] == [
            (f"held:{name}:1", "tripwire.held"),
            (f"trip:{name}:1", "tripwire.trip"),
        ]
        # A person says done, but nothing is there: read back, not verified, held again.
        await repair_done(roles.temporal, name, "alice")
        third = roles.temporal.get_workflow_handle(f"repair-{name}-1-3")
        await until("person's repair started", lambda: _started(third))
        receipt = await third.result()
        assert receipt["verdict"] != "verified"
        assert "alice says the repair is done" in receipt["report"]
        await state_of(roles, name, "held")
        # Now the person really fixes it: the read-back passes and the tripwire re-arms.
        with sqlite3.connect(db) as conn:
            conn.execute(
                "insert into rows (batch, seq, key) values (?, 0, 'alice')", [f"{name}-fix"]
            )
        await repair_done(roles.temporal, name, "alice")
        fourth = roles.temporal.get_workflow_handle(f"repair-{name}-1-4")
        await until("person's second repair started", lambda: _started(fourth))
        assert (await fourth.result())["verdict"] == "verified"
        state = await state_of(roles, name, "healthy")
        assert state.repairs_verified == 1 and len(state.trips) == 1


async def test_a_tripwire_on_an_unknown_loop_names_the_fix(
    temporal_time_skipping: WorkflowEnvironment, tmp_path: Path
) -> None:
    env = temporal_time_skipping
    db = make_rows_db(tmp_path / "rows.db")
    async with roles_for(env, tmp_path, db) as roles:
        with pytest.raises(UnknownLoop, match="declare it first with `landed loop create"):
            await repair_done(roles.temporal, "no-such-loop", "alice")
        with pytest.raises(UnknownLoop, match="landed loop create no-such-loop"):
            await loop_state(roles.temporal, "no-such-loop")


async def _started(handle: WorkflowHandle[Any, Any]) -> bool:
    try:
        await handle.describe()
    except RPCError:
        return False
    return True


async def test_a_runner_killed_while_two_signals_trip_it_leaves_exactly_one_repair(
    temporal_time_skipping: WorkflowEnvironment, tmp_path: Path
) -> None:
    """Two signals that each trip the loop arrive at once and the runner is stopped right
    after them; a new runner worker on the same queue and ledger carries on: one trip, one
    trip event, exactly one repair task, verified."""
    env = temporal_time_skipping
    db = make_rows_db(tmp_path / "rows.db")
    name = f"crash-{uuid.uuid4().hex[:6]}"
    spec = declare(name, db)
    tag = uuid.uuid4().hex[:10]
    address = env.client.service_client.config.target_host
    stack: dict[str, Any] = {
        "credentials": {"rows-db": f"sqlite:///{db}"},
        "sources": {"rows-db": {"url": f"sqlite:///{db}"}},
        "tag": tag,
    }
    async with run_roles(address, tmp_path, **stack) as roles:
        await create_loop(roles.temporal, roles.queues["runner"], spec, schedule=False)
        tw = roles.temporal.get_workflow_handle(tripwire_id(name))
        await _started(tw)
        first = [Note(task_id=f"{name}@a{i}", verdict="failed") for i in range(3)]
        second = [Note(task_id=f"{name}@b{i}", verdict="failed") for i in range(3)]
        await asyncio.gather(tw.signal(SETTLED_SIGNAL, first), tw.signal(SETTLED_SIGNAL, second))
    # The runner (with the other roles) is gone mid-trip; a new one starts on the same queues.
    async with run_roles(address, tmp_path, **stack) as roles:
        repair = await repair_handle(roles, name, 1)
        assert (await repair.result())["verdict"] == "verified"
        state = await state_of(roles, name, "healthy")
        assert [t.number for t in state.trips] == [1] and state.repairs_verified == 1
        for other in (f"repair-{name}-1-2", f"repair-{name}-2-1"):
            assert not await _started(roles.temporal.get_workflow_handle(other)), other
        ledger = await roles.ledger()
        repairs = [r.task_id for r in await ledger.board() if r.task_id.startswith("repair-")]
        events = await ledger.events(name)
        await ledger.close()
        assert repairs == [f"repair-{name}-1-1"]
        assert [e.key for e in events] == [f"trip:{name}:1"]
        history = await tw.fetch_history()
    _record("runner_killed_mid_trip", history)
    replayer = Replayer(workflows=[Tripwire], plugins=[landed_plugin()])
    result = await replayer.replay_workflow(history, raise_on_replay_failure=False)
    assert result.replay_failure is None
