"""The ledger is a loop's durable stream (landed.loops.stream): on Temporal's dev server, a
loop's tasks settle as failures while the runner's signal never reaches the tripwire (as when
the runner dies after each settle, before its batch is sent), and the tripwire still trips on
its rule within a bounded time, from its own reads of the ledger."""

from __future__ import annotations

import time
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from helpers.roles import run_roles
from helpers.scorecard import settled as receipt_of
from helpers.sor import make_rows_db, rows_task
from helpers.wait import until
from temporalio.service import RPCError
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Replayer

from landed.activities import runner
from landed.ledger.factory import open_ledger
from landed.loops.spec import LoopSpec, loop_task, tripwire_id
from landed.loops.stream import EVERY, PAGES
from landed.loops.tripwire import TripwireInput, TripwireState
from landed.receipts.model import Receipt
from landed.task.names import TRIPWIRE_WORKFLOW
from landed.temporal.loops import create_loop, loop_state
from landed.temporal.plugin import landed_plugin
from landed.workflows.tripwire import Tripwire


def declare(name: str, db: Path) -> LoopSpec:
    """A loop whose runs claim done and write nothing (never verified), with no repair act of
    its own: a trip holds the loop for a person."""
    template = rows_task("x", db, expect=1, batch=f"{name}-run", write=0)
    del template["task_id"]
    return LoopSpec.model_validate({"name": name, "every": "PT15M", "task": template})


async def test_failures_whose_signals_are_lost_still_trip_the_loop_from_the_ledger(
    temporal_dev: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    lost: list[str] = []

    def runner_died_before_sending(_client: Any, _queue: str, receipt: Receipt) -> None:
        lost.append(receipt.task_id)  # the batch this settle joined is never sent

    monkeypatch.setattr(runner, "tell_tripwire", runner_died_before_sending)
    db = make_rows_db(tmp_path / "rows.db")
    name = f"lost-{uuid.uuid4().hex[:6]}"
    spec = declare(name, db)
    stack: dict[str, Any] = {
        "credentials": {"rows-db": f"sqlite:///{db}"},
        "sources": {"rows-db": {"url": f"sqlite:///{db}"}},
    }
    async with run_roles(temporal_dev, tmp_path, **stack) as roles:
        await create_loop(roles.temporal, roles.queues["runner"], spec, schedule=False)

        async def state() -> TripwireState | None:
            try:
                return await loop_state(roles.temporal, name)
            except RPCError:
                return None

        await until("the tripwire is running", state, every=0.5)
        ids = [f"{name}@{i}" for i in range(3)]
        for task_id in ids:
            receipt = await roles.client.run(loop_task(spec, task_id))
            assert receipt.verdict != "verified", receipt.verdict
        assert lost == ids  # every settle's signal was lost
        settled = time.monotonic()

        async def tripped() -> TripwireState | None:
            found = await state()
            return found if found is not None and found.phase == "held" else None

        held = await until("the tripwire tripped from the ledger", tripped, timeout=90, every=1)
        took = time.monotonic() - settled
        history = await roles.temporal.get_workflow_handle(tripwire_id(name)).fetch_history()
    assert held.last_trip is not None and held.last_trip.rule == "3 not-done in a row"
    assert held.last_trip.receipts == [f"{i}#1" for i in ids]
    # Bounded: its next read of the stream, at most EVERY after the last settle (and slack).
    assert took <= EVERY.total_seconds() + 30, took
    replayer = Replayer(workflows=[Tripwire], plugins=[landed_plugin()])
    result = await replayer.replay_workflow(history, raise_on_replay_failure=False)
    assert result.replay_failure is None


async def test_a_run_carried_on_from_before_the_stream_reads_only_what_is_new_at_once(
    temporal_time_skipping: WorkflowEnvironment, tmp_path: Path
) -> None:
    """A tripwire continued as new from a run before the stream carries no cursor: its stream
    opens behind what that run had judged (its arming), so older not-done runs are not judged
    again; a backlog longer than one wake-up's pages is read on at once, not a timer later."""
    env = temporal_time_skipping
    db = make_rows_db(tmp_path / "rows.db")
    name = f"carried-{uuid.uuid4().hex[:6]}"
    spec = declare(name, db)
    now = datetime.now(UTC)
    old = [f"{name}@old{i}" for i in range(3)]
    new = [f"{name}@new{i:03d}" for i in range(PAGES * 100 + 20)]

    def failed(task_id: str, at: datetime) -> Receipt:
        return receipt_of(task_id, loop=name, verdict="failed").model_copy(
            update={"settled_at": at}
        )

    stack: dict[str, Any] = {"credentials": {"rows-db": f"sqlite:///{db}"}}
    async with run_roles(env.client.service_client.config.target_host, tmp_path, **stack) as roles:
        async with await open_ledger(roles.ledger_url) as ledger:
            await ledger.append_many([failed(t, now - timedelta(hours=2)) for t in old])
            rows = [
                failed(t, now - timedelta(minutes=9) + timedelta(seconds=i))
                for i, t in enumerate(new)
            ]
            await ledger.append_many(rows)
            (last,) = await ledger.loop_latest(name, limit=1)
        carried = TripwireState(loop=name, armed_at=now - timedelta(minutes=10), declared=True)
        await roles.temporal.start_workflow(
            TRIPWIRE_WORKFLOW,
            TripwireInput(loop=name, spec=spec, state=carried),
            id=tripwire_id(name),
            task_queue=roles.queues["runner"],
        )
        await env.sleep(EVERY.total_seconds() + 1)  # one timer: the first wake-up

        async def read_through() -> TripwireState | None:
            try:
                found = await loop_state(roles.temporal, name)
            except RPCError:
                return None
            return found if found.cursor == last.sequence else None

        # Well within one more timer (EVERY, in real time here): read on at once.
        half = EVERY.total_seconds() / 2
        state = await until("the whole backlog read", read_through, timeout=half, every=0.5)
    assert state.phase == "held" and state.last_trip is not None
    assert state.last_trip.rule == "3 not-done in a row"
    assert state.last_trip.receipts == [f"{t}#1" for t in new[:3]]
