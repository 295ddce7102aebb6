"""Harness failures (GOV-10) and blockers (DOD-9) on real Temporal servers: a task whose harness
is unavailable is released and acts on another actor queue of its pool (recorded on the
receipt), a pool whose harnesses all keep failing parks the task as blocked (never failed or
done), and a blocked task settles blocked while the rest of the fleet settles verified."""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path
from typing import Any

from helpers.fleet_acts import fleet_acts_started, fleet_log_table
from helpers.fleet_roles import extra_actor, pool_place
from helpers.roles import Roles, run_roles
from helpers.sor import make_rows_db, rows_task
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Replayer

from landed.governance.harness import COOL_AFTER
from landed.receipts.model import Receipt
from landed.temporal.plugin import landed_plugin
from landed.workflows.agent_task import AgentTask
from landed.workflows.fleet import Fleet

ACTS = ("helpers.acts", "helpers.fleet_acts")


def _task(task_id: str, db: Path, batch: str, **act: Any) -> dict[str, Any]:
    spec = rows_task(task_id, db, expect=2, batch=batch, write=2, **act)
    spec["act"]["name"] = "fleet.rows"
    return spec


def _roles(address: str, tmp_path: Path, db: Path, **runner: Any) -> Any:
    return run_roles(
        address,
        tmp_path,
        credentials={"rows-db": f"sqlite:///{db}"},
        sources={"rows-db": {"url": f"sqlite:///{db}"}},
        acts=ACTS,
        runner=runner or None,
    )


async def _replay(roles: Roles, task_id: str) -> None:
    history = await roles.temporal.get_workflow_handle(task_id).fetch_history()
    replayer = Replayer(workflows=[AgentTask, Fleet], plugins=[landed_plugin()])
    result = await replayer.replay_workflow(history, raise_on_replay_failure=False)
    assert result.replay_failure is None, result.replay_failure


async def _result(env: WorkflowEnvironment, roles: Roles, task_id: str) -> Receipt:
    """The receipt, once the test server's clock has been moved past the backoffs (a durable
    timer each) in steps, while the roles work in between."""
    handle = roles.temporal.get_workflow_handle(task_id)
    for _ in range(60):
        desc = await handle.describe()
        if desc.close_time is not None:
            break
        await env.sleep(15)
        await asyncio.sleep(0.5)
    return Receipt.model_validate(await handle.result())


def _ext(receipt: Receipt) -> dict[str, Any]:
    assert receipt.landed is not None
    return receipt.landed.model_dump()


async def test_an_unavailable_harness_releases_the_task_to_the_next_in_its_pool(
    temporal_time_skipping: WorkflowEnvironment, tmp_path: Path
) -> None:
    env = temporal_time_skipping
    place = pool_place(env, tmp_path)
    address, db, tag, second = place.address, place.db, place.tag, place.second
    async with _roles(address, tmp_path, db, actor_pool=[second]) as roles:
        down = roles.identities["actor"]
        async with extra_actor(address, second, f"actor2@{tag}", db):
            spec = _task(f"rotate-{tag}", db, "r1", unavailable_on=[down])
            handle = await roles.client.start(spec)
            receipt = await _result(env, roles, handle.task_id)
        assert receipt.verdict == "verified"
        harness = _ext(receipt)["harness"]
        assert [r["queue"] for r in harness["releases"]] == [roles.queues["actor"]]
        assert harness["releases"][0]["actor"] == down
        assert "usage limit" in harness["releases"][0]["error"]
        assert harness["acted_on"] == second
        # The release is not an act attempt: attempt 1, no act error, acted once on actor2.
        assert _ext(receipt)["attempt"] == 1 and not _ext(receipt).get("act_error")
        assert [i for _, i, _ in fleet_acts_started(db)] == [f"actor2@{tag}"]
        await _replay(roles, handle.task_id)


async def test_a_release_whose_write_shows_is_read_back_and_never_acts_again(
    temporal_time_skipping: WorkflowEnvironment, tmp_path: Path
) -> None:
    """A harness that wrote half the outcome and then said it was unavailable: the read-back
    after the release sees the write, so no other harness runs the act (a second copy)."""
    env = temporal_time_skipping
    place = pool_place(env, tmp_path)
    address, db, tag, second = place.address, place.db, place.tag, place.second
    async with _roles(address, tmp_path, db, actor_pool=[second]) as roles:
        down = roles.identities["actor"]
        async with extra_actor(address, second, f"actor2@{tag}", db):
            spec = _task(f"half-{tag}", db, "h1", unavailable_after_write_on=[down])
            spec["act"]["input"]["write"] = 1  # one of the two rows the outcome needs
            handle = await roles.client.start(spec)
            receipt = await _result(env, roles, handle.task_id)
        assert [i for _, i, _ in fleet_acts_started(db)] == [down]  # actor2 never acted
        assert receipt.verdict != "verified"
        assert "part of the outcome may have landed" in (receipt.report or "")
        assert "session expired" in (_ext(receipt).get("act_error") or "")
        assert len(_ext(receipt)["harness"]["releases"]) == 1
        await _replay(roles, handle.task_id)


async def test_a_pool_with_no_healthy_harness_parks_the_task_as_blocked(
    temporal_time_skipping: WorkflowEnvironment, tmp_path: Path
) -> None:
    env = temporal_time_skipping
    place = pool_place(env, tmp_path)
    address, db, tag, second = place.address, place.db, place.tag, place.second
    async with _roles(address, tmp_path, db, actor_pool=[second]) as roles:
        down = [roles.identities["actor"], f"actor2@{tag}"]
        async with extra_actor(address, second, f"actor2@{tag}", db):
            spec = _task(f"none-healthy-{tag}", db, "n1", unavailable_on=down)
            handle = await roles.client.start(spec)
            receipt = await _result(env, roles, handle.task_id)
        # Blocked, naming the condition and who can clear it: never failed, never done.
        assert receipt.verdict == "blocked"
        ext = _ext(receipt)
        assert "no healthy harness" in ext["blocked"]["condition"]
        assert "operator of the harness pool" in ext["blocked"]["clear_by"]
        # Each harness was taken out after COOL_AFTER failures in a row (the cool-down), so
        # the task stopped there instead of retrying until its time cap.
        assert len(ext["harness"]["releases"]) == 2 * COOL_AFTER
        assert sorted(ext["harness"]["cooled"]) == sorted([roles.queues["actor"], second])
        assert fleet_acts_started(db) == []
        assert len(fleet_acts_started(db, "unavailable")) == 2 * COOL_AFTER
        await _replay(roles, handle.task_id)


async def test_a_blocked_task_parks_alone_and_the_fleet_moves_on(
    temporal_dev: str, tmp_path: Path
) -> None:
    db = make_rows_db(tmp_path / "rows.db")
    fleet_log_table(db)
    tag = uuid.uuid4().hex[:8]
    async with _roles(temporal_dev, tmp_path, db) as roles:
        blocked = _task(f"blocked-{tag}", db, "k0", blocked="the vendor has not issued the API key")
        others = [_task(f"moves-on-{tag}-{i}", db, f"k{i}") for i in (1, 2)]
        handles = [await roles.client.start(s) for s in (blocked, *others)]
        receipts = await asyncio.gather(*(h.result() for h in handles))
        assert [r.verdict for r in receipts] == ["blocked", "verified", "verified"]
        parked = _ext(receipts[0])["blocked"]
        assert parked["condition"] == "the vendor has not issued the API key"
        assert parked["clear_by"].startswith("ops@example.com")
        # Cost by phase (GOV-8): the act's from its report, the verifier's measured.
        cost = _ext(receipts[1])["cost"]
        assert cost["act"]["usd"] == 0.01 and cost["act"]["input_tokens"] == 100
        assert cost["verify"]["reads"] >= 2 and cost["verify"]["probe_seconds"] > 0
        await _replay(roles, handles[0].task_id)
