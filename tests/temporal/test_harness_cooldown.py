"""The harness cool-down is fleet-wide (GOV-10), on Temporal's time-skipping server: tasks
report each harness release to the fleet's control workflow (``LandedFleet``), which takes a
harness out after ``COOL_AFTER`` failures across the fleet; a task started afterwards skips it
without an attempt of its own, and ``landed status`` shows it cooling down until when."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from helpers.fleet_acts import fleet_acts_started
from helpers.fleet_roles import extra_actor, pool_place
from helpers.roles import Roles, run_roles
from helpers.sor import rows_task
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Replayer

from landed.cli.fleet_harness import cooling_lines
from landed.governance.harness import COOL_AFTER
from landed.receipts.model import Receipt
from landed.task.gate_messages import DEFAULT_FLEET_ID
from landed.temporal.fleet import read_switch
from landed.temporal.plugin import landed_plugin
from landed.workflows.agent_task import AgentTask
from landed.workflows.fleet import Fleet

ACTS = ("helpers.acts", "helpers.fleet_acts")


def _task(task_id: str, db: Path, batch: str, down: list[str]) -> dict[str, Any]:
    spec = rows_task(task_id, db, expect=2, batch=batch, write=2, unavailable_on=down)
    spec["act"]["name"] = "fleet.rows"
    return spec


async def _replay(roles: Roles, workflow_id: str) -> None:
    history = await roles.temporal.get_workflow_handle(workflow_id).fetch_history()
    replayer = Replayer(workflows=[AgentTask, Fleet], plugins=[landed_plugin()])
    result = await replayer.replay_workflow(history, raise_on_replay_failure=False)
    assert result.replay_failure is None, result.replay_failure


async def _settle(env: WorkflowEnvironment, roles: Roles, task_ids: list[str]) -> list[Receipt]:
    """The receipts, moving the test server's clock past the release backoffs in small steps
    (far below the cool-down), while the roles work in between."""
    handles = [roles.temporal.get_workflow_handle(t) for t in task_ids]
    for _ in range(60):
        if all([(await h.describe()).close_time is not None for h in handles]):
            break
        await env.sleep(3)
        await asyncio.sleep(0.3)
    return [Receipt.model_validate(await h.result()) for h in handles]


def _harness(receipt: Receipt) -> dict[str, Any]:
    assert receipt.landed is not None
    harness: dict[str, Any] = receipt.landed.model_dump()["harness"]
    return harness


async def test_a_harness_failing_across_tasks_cools_down_for_the_whole_fleet(
    temporal_time_skipping: WorkflowEnvironment, tmp_path: Path
) -> None:
    env = temporal_time_skipping
    place = pool_place(env, tmp_path)
    address, db, tag, second = place.address, place.db, place.tag, place.second
    async with run_roles(
        address,
        tmp_path,
        credentials={"rows-db": f"sqlite:///{db}"},
        sources={"rows-db": {"url": f"sqlite:///{db}"}},
        acts=ACTS,
        runner={"actor_pool": [second]},
    ) as roles:
        first, down = roles.queues["actor"], [roles.identities["actor"]]
        async with extra_actor(address, second, f"actor2@{tag}", db):
            # Task A (three of them): each fails once on harness 1 and acts on harness 2. No
            # task alone reaches COOL_AFTER failures in a row; the fleet counts all three.
            a_ids = [f"a{i}-{tag}" for i in range(COOL_AFTER)]
            for i, task_id in enumerate(a_ids):
                await roles.client.start(_task(task_id, db, f"a{i}", down))
            for receipt in await _settle(env, roles, a_ids):
                assert receipt.verdict == "verified"
                assert [r["queue"] for r in _harness(receipt)["releases"]] == [first]
            read = await read_switch(roles.temporal, DEFAULT_FLEET_ID)
            assert read.harnesses is not None and first in read.harnesses.cool_until
            lines = cooling_lines(read.harnesses, await env.get_current_time())
            assert lines[0] == "harnesses cooling down (1):" and first in lines[1]
            assert "usage limit" in lines[1]
            # Task B, started afterwards, goes straight to harness 2: no release, no attempt
            # on harness 1 (its act would have raised there and been logged as unavailable).
            b_id = f"b-{tag}"
            await roles.client.start(_task(b_id, db, "b", down))
            (receipt_b,) = await _settle(env, roles, [b_id])
        assert receipt_b.verdict == "verified"
        harness_b = _harness(receipt_b)
        assert harness_b["releases"] == []
        assert harness_b["acted_on"] == second and harness_b["cooled"] == [first]
        assert [t for t, _, _ in fleet_acts_started(db, "unavailable")].count(b_id) == 0
        assert len(fleet_acts_started(db, "unavailable")) == COOL_AFTER
        assert [i for t, i, _ in fleet_acts_started(db) if t == b_id] == [f"actor2@{tag}"]
        await _replay(roles, b_id)
        await _replay(roles, a_ids[-1])
        await _replay(roles, DEFAULT_FLEET_ID)
