"""Worker versioning on a real dev server: a task started on version 1 finishes on version 1
after version 2 (with a workflow whose commands changed) is promoted; new tasks run on 2."""

from __future__ import annotations

import asyncio
import sqlite3
import uuid
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from helpers.roles import run_roles
from helpers.sor import make_rows_db, rows_task
from helpers.wait import until
from temporalio import workflow
from temporalio.api.enums.v1 import EventType, VersioningBehavior
from temporalio.api.workflowservice.v1 import SetWorkerDeploymentCurrentVersionRequest
from temporalio.client import WorkflowHistory
from temporalio.common import WorkerDeploymentVersion
from temporalio.worker import (
    ExecuteWorkflowInput,
    Interceptor,
    Replayer,
    WorkflowInboundInterceptor,
    WorkflowInterceptorClassInput,
)

from landed.signing import KeyPair
from landed.temporal.deployments import UnknownVersion, promote, state
from landed.temporal.plugin import landed_plugin
from landed.temporal.role_setup import RoleError
from landed.temporal.settings import RunnerSettings
from landed.temporal.versioning import VersioningError, bootstrap, role_version
from landed.temporal.workers import run_role

pytestmark = pytest.mark.slow

PINNED = VersioningBehavior.VERSIONING_BEHAVIOR_PINNED

ROLES = ("actor", "verifier", "runner")


class _ExtraTimer(Interceptor):
    """Version 2's change: every workflow starts with a timer version 1 never scheduled, so a
    version 1 history run by version 2's code fails as nondeterministic."""

    def workflow_interceptor_class(
        self, input: WorkflowInterceptorClassInput
    ) -> type[WorkflowInboundInterceptor]:
        class _Inbound(WorkflowInboundInterceptor):
            async def execute_workflow(self, input: ExecuteWorkflowInput) -> Any:
                await workflow.sleep(timedelta(milliseconds=10))
                return await super().execute_workflow(input)

        return _Inbound


def _build_ids(history: WorkflowHistory) -> set[tuple[str, int]]:
    """The build id and versioning behaviour of every workflow task completed in the history."""
    return {
        (
            e.workflow_task_completed_event_attributes.deployment_version.build_id,
            e.workflow_task_completed_event_attributes.versioning_behavior,
        )
        for e in history.events
        if e.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED
    }


def _first_command(history: WorkflowHistory) -> int:
    """What the workflow did first: the event after its first completed workflow task."""
    kinds = [e.event_type for e in history.events]
    return kinds[kinds.index(EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED) + 1]


def _kinds(history: WorkflowHistory) -> set[int]:
    return {e.event_type for e in history.events}


def _acted(db: Path, task_id: str) -> bool:
    with sqlite3.connect(db) as conn:
        return (
            conn.execute("select 1 from act_log where task = ?", [task_id]).fetchone() is not None
        )


async def _replays(history: WorkflowHistory, interceptors: tuple[Interceptor, ...]) -> Any:
    from landed.workflows.agent_task import AgentTask

    replayer = Replayer(workflows=[AgentTask], plugins=[landed_plugin()], interceptors=interceptors)
    return await replayer.replay_workflow(history, raise_on_replay_failure=False)


async def test_a_task_finishes_on_the_version_that_started_it(
    temporal_dev: str, tmp_path: Path
) -> None:
    db = make_rows_db(tmp_path / "rows.db")
    tag = uuid.uuid4().hex[:8]
    names = {r: f"landed-{r}-{tag}" for r in ROLES}
    common: dict[str, Any] = {
        "credentials": {"rows-db": f"sqlite:///{db}"},
        "sources": {"rows-db": {"url": f"sqlite:///{db}"}},
        "tag": tag,
    }
    hold = tmp_path / "release-v1-task"
    async with run_roles(
        temporal_dev, tmp_path, versioning={**names, "build_id": "v1"}, **common
    ) as v1:
        # Version 1 made itself current: its deployments had none.
        for role in ROLES:
            assert (await state(v1.temporal, role, names[role])).current == "v1"
        old = rows_task(f"old-{tag}", db, expect=1, batch=f"old{tag}", write=1)
        old["act"]["input"]["wait_for_file"] = str(hold)
        old_handle = await v1.client.start(old)
        await until("the v1 task acts", lambda: _acted(db, old["task_id"]))

        async with run_roles(
            temporal_dev,
            tmp_path,
            versioning={**names, "build_id": "v2"},
            runner_interceptors=(_ExtraTimer(),),
            **common,
        ) as v2:
            runner = await state(v2.temporal, "runner", names["runner"])
            # Version 2 polls, but a deployment with a current version is not its to change.
            assert runner.current == "v1"
            held = {v.build_id: v.open_tasks for v in runner.versions}
            assert held == {"v1": 1, "v2": 0}
            for role in ROLES:
                await promote(v2.temporal, names[role], "v2", ramp=None, identity="test")
            runner = await state(v2.temporal, "runner", names["runner"])
            assert {(v.build_id, v.status, v.open_tasks) for v in runner.versions} == {
                ("v1", "draining", 1),
                ("v2", "current", 0),
            }
            new = rows_task(f"new-{tag}", db, expect=1, batch=f"new{tag}", write=1)
            new_receipt = await asyncio.wait_for(v2.client.run(new), 60)
            assert new_receipt.verdict == "verified"
            hold.touch()  # the act of the version 1 task returns now
            old_receipt = await asyncio.wait_for(old_handle.result(), 60)
            assert old_receipt.verdict == "verified"
            runner = await state(v2.temporal, "runner", names["runner"])
            assert runner.current == "v2"
            assert {v.build_id: v.open_tasks for v in runner.versions} == {"v1": 0, "v2": 0}
            old_history = await v2.temporal.get_workflow_handle(old["task_id"]).fetch_history()
            new_history = await v2.temporal.get_workflow_handle(new["task_id"]).fetch_history()

    # Each task ran every workflow task on the build that started it, none failed.
    assert _build_ids(old_history) == {("v1", PINNED)}
    assert _build_ids(new_history) == {("v2", PINNED)}
    for history in (old_history, new_history):
        assert EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED not in _kinds(history)
    assert _first_command(old_history) == EventType.EVENT_TYPE_MARKER_RECORDED  # the plan
    assert _first_command(new_history) == EventType.EVENT_TYPE_TIMER_STARTED  # version 2's
    # The old history replays on version 1's code, and would not have on version 2's: the
    # change was one that needed pinning (or a drain) to be safe.
    assert (await _replays(old_history, ())).replay_failure is None
    assert (await _replays(new_history, (_ExtraTimer(),))).replay_failure is None
    broken = (await _replays(old_history, (_ExtraTimer(),))).replay_failure
    assert broken is not None and "nondetermin" in str(broken).lower()


async def test_ramping_and_an_unknown_build_id(temporal_dev: str, tmp_path: Path) -> None:
    """--ramp makes a version ramping at that percent beside the current one; a build id no
    worker of the deployment polled with is refused, and changes nothing."""
    tag = uuid.uuid4().hex[:8]
    names = {r: f"landed-{r}-{tag}" for r in ROLES}
    async with (
        run_roles(temporal_dev, tmp_path, versioning={**names, "build_id": "r1"}, tag=tag) as one,
        run_roles(temporal_dev, tmp_path, versioning={**names, "build_id": "r2"}, tag=tag),
    ):
        await promote(one.temporal, names["runner"], "r2", ramp=25.0, identity="test")
        runner = await state(one.temporal, "runner", names["runner"])
        assert (runner.current, runner.ramping, runner.ramp_percent) == ("r1", "r2", 25.0)
        assert {v.build_id: v.status for v in runner.versions} == {
            "r1": "current",
            "r2": "ramping",
        }
        with pytest.raises(UnknownVersion, match=r"'r9' is not a version.*known: r1, r2"):
            await promote(one.temporal, names["runner"], "r9", ramp=None, identity="test")
        after = await state(one.temporal, "runner", names["runner"])
        assert (after.current, after.ramping) == ("r1", "r2")
        # Another replica of r2 starting now finds a current version: it changes nothing.
        r2 = WorkerDeploymentVersion(names["runner"], "r2")
        again = await bootstrap(one.temporal, r2, identity="test")
        assert again["made_current"] is False and again["current_build_id"] == "r1"
        # An operator who sets the deployment back to unversioned keeps it so: a restarting
        # worker does not make itself current again.
        await one.temporal.workflow_service.set_worker_deployment_current_version(
            SetWorkerDeploymentCurrentVersionRequest(
                namespace=one.temporal.namespace,
                deployment_name=names["runner"],
                build_id="",
                ignore_missing_task_queues=True,
            )
        )
        r1 = WorkerDeploymentVersion(names["runner"], "r1")
        assert (await bootstrap(one.temporal, r1, identity="test"))["made_current"] is False
        assert (await state(one.temporal, "runner", names["runner"])).current is None


async def test_a_version_no_worker_polls_is_never_made_current(temporal_dev: str) -> None:
    """The bootstrap fails closed: a version the server never saw poll is not made current
    (a queue routed to it would dispatch to nobody), and the error names the way out."""
    from landed.temporal.plugin import connect

    name = f"landed-runner-{uuid.uuid4().hex[:8]}"
    client = await connect(identity="test", address=temporal_dev)
    settings = RunnerSettings(deployment_name=name, build_id="b1")
    version = role_version(settings)
    assert version is not None
    # No worker has polled: the version never appears, and the bootstrap says so.
    with pytest.raises(VersioningError, match=r"did not appear.*VERSIONING=false"):
        await bootstrap(client, version, identity="test", within_s=0.5)


async def test_a_server_without_worker_deployments_is_named_with_the_fix(
    temporal_time_skipping: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Temporal's time-skipping test server has no worker deployments: a versioned runner
    refuses to say it is ready (its queue would dispatch nothing) and names
    LANDED_RUNNER_VERSIONING=false; with that set, the same runner starts."""
    address = temporal_time_skipping.client.service_client.config.target_host
    _, pub = KeyPair.generate().save(tmp_path / "verifier")
    for name, value in {
        "TRUST": str(pub),
        "TASK_QUEUE": f"runner-{uuid.uuid4().hex[:8]}",
        "LEDGER_URL": f"sqlite:///{tmp_path / 'ledger.db'}",
        "DEPLOYMENT_NAME": f"landed-runner-{uuid.uuid4().hex[:8]}",
    }.items():
        monkeypatch.setenv(f"LANDED_RUNNER_{name}", value)
    monkeypatch.setenv("LANDED_BUILD_ID", "t1")
    stop = asyncio.Event()
    ready: list[dict[str, Any]] = []
    with pytest.raises(RoleError, match="LANDED_<ROLE>_VERSIONING=false"):
        await asyncio.wait_for(
            run_role("runner", stop=stop, on_ready=ready.append, address=address), 60
        )
    assert ready == []
    monkeypatch.setenv("LANDED_RUNNER_VERSIONING", "false")
    role = asyncio.create_task(
        run_role("runner", stop=stop, on_ready=ready.append, address=address)
    )
    await until("the unversioned runner polls", lambda: bool(ready) or role.done())
    assert not role.done(), role.exception()
    assert "versioning" not in ready[0]
    stop.set()
    await asyncio.wait_for(role, 30)
