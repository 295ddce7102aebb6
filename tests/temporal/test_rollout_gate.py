"""The rollout gate on a real dev server: a build whose verifier cannot read the canary's
source fails the gate and takes no traffic (`landed deploy promote --gate` exits 5); a good
build passes, is promoted, and takes the next task."""

from __future__ import annotations

import asyncio
import json
import os
import sqlite3
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest
from helpers.roles import run_roles
from helpers.sor import make_rows_db, rows_task
from helpers.wait import until
from temporalio.api.enums.v1 import EventType, TaskQueueType
from temporalio.api.taskqueue.v1 import TaskQueue
from temporalio.api.workflowservice.v1 import DescribeTaskQueueRequest

from landed.task.canary import CanaryInput
from landed.temporal.deployments import promote, state
from landed.temporal.rollout import GateFailed, gated_promote, run_gate
from landed.temporal.versioning import describe_deployment, has_version

pytestmark = pytest.mark.slow

ROLES = ("actor", "verifier", "runner")
HISTORIES = Path(__file__).parent / "histories" / "rollout_gate"


def _canary_db(path: Path) -> Path:
    with sqlite3.connect(path) as conn:
        conn.execute("create table landed_canary (marker text primary key)")
    return path


def _markers(db: Path) -> list[str]:
    with sqlite3.connect(db) as conn:
        return [r[0] for r in conn.execute("select marker from landed_canary")]


async def _known(temporal: Any, names: dict[str, str], build: str) -> bool:
    found = [await describe_deployment(temporal, names[r]) for r in ROLES]
    return all(d is not None and has_version(d, build) for d in found)


async def _on(temporal: Any, names: dict[str, str], build: str) -> bool:
    return all([(await state(temporal, r, names[r])).current == build for r in ROLES])


async def _queue_routes(temporal: Any, queue: str, build: str) -> bool:
    described = await temporal.workflow_service.describe_task_queue(
        DescribeTaskQueueRequest(
            namespace=temporal.namespace,
            task_queue=TaskQueue(name=queue),
            task_queue_type=TaskQueueType.TASK_QUEUE_TYPE_ACTIVITY,
        )
    )
    return bool(described.versioning_info.current_deployment_version.build_id == build)


async def _cli_promote(build: str, names: dict[str, str], env: dict[str, str]) -> tuple[int, str]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        *("-m", "landed", "deploy", "promote", build, "--gate", "--gate-input", env.pop("GATE")),
        env={**os.environ, **env},
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(proc.communicate(), 180)
    return int(proc.returncode or 0), (out + err).decode()


async def test_a_bad_build_fails_the_gate_and_a_good_one_passes(
    temporal_dev: str, tmp_path: Path
) -> None:
    canary = _canary_db(tmp_path / "canary.db")
    rows = make_rows_db(tmp_path / "rows.db")
    tag = uuid.uuid4().hex[:8]
    names = {r: f"landed-{r}-{tag}" for r in ROLES}
    creds = {"canary-db": f"sqlite:///{canary}", "rows-db": f"sqlite:///{rows}"}
    good = {"canary-db": {"url": f"sqlite:///{canary}"}, "rows-db": {"url": f"sqlite:///{rows}"}}
    # The bad build's verifier was shipped without the canary's source.
    bad = {"rows-db": good["rows-db"]}
    gate = CanaryInput(
        source="canary-db",
        credential="canary-db",
        table="landed_canary",
        dialect="sqlite",
        timeout_s=90,
    )
    common: dict[str, Any] = {"credentials": creds, "tag": tag}
    async with run_roles(
        temporal_dev, tmp_path, versioning={**names, "build_id": "v1"}, sources=good, **common
    ) as v1:
        gate_file = tmp_path / "gate.json"
        gate_file.write_text(gate.model_dump_json())
        env = {
            "TEMPORAL_ADDRESS": temporal_dev,
            "LANDED_RUNNER_TASK_QUEUE": v1.queues["runner"],
            **{f"LANDED_{r.upper()}_DEPLOYMENT_NAME": n for r, n in names.items()},
        }
        async with run_roles(
            temporal_dev, tmp_path, versioning={**names, "build_id": "v2"}, sources=bad, **common
        ):
            code, said = await _cli_promote("v2", names, {**env, "GATE": str(gate_file)})
            assert code == 5, said
            assert "the canary settled" in said and "not verified" in said, said
            # No traffic: every role is back on (or never left) v1.
            await until(
                "every role back on v1",
                lambda: _on(v1.temporal, names, "v1"),
            )
            # The deployment says v1 before the verifier's queue itself routes there; until
            # it does, the canary's reads may still reach v2's verifier (and fail there).
            await until(
                "the verifier's queue routing to v1",
                lambda: _queue_routes(v1.temporal, v1.queues["verifier"], "v1"),
            )
            # The old verifier verifying the new runner's canary is no proof of the new build.
            quick = gate.model_copy(update={"wait_for_verifier_s": 1.0})
            with pytest.raises(GateFailed, match=r"(routes to|steps ran on) v1, not build v2"):
                await run_gate(v1.temporal, names["runner"], "v2", v1.queues["runner"], quick)
            task = rows_task(f"after-bad-{tag}", rows, expect=1, batch=f"b{tag}", write=1)
            receipt = await asyncio.wait_for(v1.client.run(task), 60)
            assert receipt.verdict == "verified"
            assert _build_ids(await _history(v1.temporal, task["task_id"])) == {"v1"}

        async with run_roles(
            temporal_dev, tmp_path, versioning={**names, "build_id": "v3"}, sources=good, **common
        ):
            before = await gated_promote(
                v1.temporal,
                names,
                "v3",
                runner_queue=v1.queues["runner"],
                gate=gate,
                identity="test",
            )
            assert before == dict.fromkeys(ROLES, "v1")
            await until("every role on v3", lambda: _on(v1.temporal, names, "v3"))
            task = rows_task(f"after-good-{tag}", rows, expect=1, batch=f"g{tag}", write=1)
            receipt = await asyncio.wait_for(v1.client.run(task), 60)
            assert receipt.verdict == "verified"
            assert _build_ids(await _history(v1.temporal, task["task_id"])) == {"v3"}
            # The gate's own report: the canary's steps ran on v3, and its marker is there.
            report = await run_gate(v1.temporal, names["runner"], "v3", v1.queues["runner"], gate)
            assert report["facts"]["verifier_builds"] == ["v3"], report
            assert report["facts"]["runner_builds"] == ["v3"], report
            gate_history = await _history(v1.temporal, report["workflow_id"])
            # The two canaries on v3 wrote their markers. v2's verifier cannot read the canary
            # source: its canary settles blocked before any act when its pre-read reaches v2,
            # and acts (then fails its read-back) when the pre-read reached the old verifier
            # before the gate routed the new one; at most one marker per v2 gate.
            builds = [m.split(":")[0] for m in _markers(canary)]
            assert builds.count("v3") == 2 and builds.count("v2") <= 2, builds

        # Released all at once, the runner's gate waits for the verifier's new build.
        async with run_roles(
            temporal_dev, tmp_path, versioning={**names, "build_id": "v4"}, sources=good, **common
        ):
            await until("v4 is a version of each role", lambda: _known(v1.temporal, names, "v4"))
            # The actor first (v3's workers are gone), then the verifier while the gate waits.
            await promote(v1.temporal, names["actor"], "v4", ramp=None, identity="test")
            waits = gate.model_copy(update={"wait_for_verifier_s": 1.0})
            with pytest.raises(GateFailed, match=r"routes to v3, not build v4.*verifier first"):
                await run_gate(v1.temporal, names["runner"], "v4", v1.queues["runner"], waits)
            waits = waits.model_copy(update={"wait_for_verifier_s": 60.0})
            started = asyncio.create_task(
                run_gate(v1.temporal, names["runner"], "v4", v1.queues["runner"], waits)
            )
            await asyncio.sleep(3)
            assert not started.done()
            await promote(v1.temporal, names["verifier"], "v4", ramp=None, identity="test")
            report = await asyncio.wait_for(started, 90)
            assert report["facts"]["verifier_builds"] == ["v4"], report
    await _replays(gate_history)


async def _replays(recorded: Any) -> None:
    """The gate's history replays on the current code, and so does each committed one (a
    change to its commands fails here; record again with LANDED_RECORD_HISTORIES=1)."""
    from temporalio.client import WorkflowHistory
    from temporalio.worker import Replayer

    from landed.temporal.plugin import landed_plugin
    from landed.workflows.rollout_gate import RolloutGate

    if os.environ.get("LANDED_RECORD_HISTORIES") == "1":
        HISTORIES.mkdir(exist_ok=True)
        text = json.dumps(json.loads(recorded.to_json()), indent=1) + "\n"
        # Named by its workflow id: the canary's id derives from it, and a replay needs it.
        (HISTORIES / f"{recorded.workflow_id}.json").write_text(text)
    committed = [
        WorkflowHistory.from_json(p.stem, json.loads(p.read_text()))
        for p in sorted(HISTORIES.glob("*.json"))
    ]
    assert committed, "tests/temporal/histories/rollout_gate holds a recorded gate"
    replayer = Replayer(workflows=[RolloutGate], plugins=[landed_plugin()])
    for history in [recorded, *committed]:
        result = await replayer.replay_workflow(history, raise_on_replay_failure=False)
        assert result.replay_failure is None, (history.workflow_id, result.replay_failure)


async def _history(temporal: Any, task_id: str) -> Any:
    return await temporal.get_workflow_handle(task_id).fetch_history()


def _build_ids(history: Any) -> set[str]:
    return {
        e.workflow_task_completed_event_attributes.deployment_version.build_id
        for e in history.events
        if e.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED
    }


def test_the_gate_input_refuses_what_it_cannot_run() -> None:
    with pytest.raises(ValueError, match="table"):
        CanaryInput.model_validate({"source": "s", "credential": "c", "table": "x; drop table y"})
    with pytest.raises(ValueError, match="extra"):
        CanaryInput.model_validate({"source": "s", "credential": "c", "table": "t", "oops": 1})
    assert json.loads(CanaryInput(source="s", credential="c", table="t").model_dump_json())


def test_the_builds_are_read_from_the_servers_stamps_on_the_verifier_queue() -> None:
    from temporalio.api.common.v1 import ActivityType, WorkerVersionStamp
    from temporalio.api.deployment.v1 import WorkerDeploymentVersion as Version
    from temporalio.api.history.v1 import (
        ActivityTaskScheduledEventAttributes as Scheduled,
    )
    from temporalio.api.history.v1 import (
        ActivityTaskStartedEventAttributes as Started,
    )
    from temporalio.api.history.v1 import HistoryEvent
    from temporalio.api.history.v1 import (
        WorkflowTaskCompletedEventAttributes as Completed,
    )
    from temporalio.api.taskqueue.v1 import TaskQueue

    from landed.activities.rollout_gate import builds_in

    def scheduled(eid: int, name: str, queue: str) -> HistoryEvent:
        return HistoryEvent(
            event_id=eid,
            event_type=EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED,
            activity_task_scheduled_event_attributes=Scheduled(
                activity_type=ActivityType(name=name), task_queue=TaskQueue(name=queue)
            ),
        )

    def started(eid: int, of: int, build: str) -> HistoryEvent:
        return HistoryEvent(
            event_id=eid,
            event_type=EventType.EVENT_TYPE_ACTIVITY_TASK_STARTED,
            activity_task_started_event_attributes=Started(
                scheduled_event_id=of, worker_version=WorkerVersionStamp(build_id=build)
            ),
        )

    wft = HistoryEvent(
        event_id=1,
        event_type=EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED,
        workflow_task_completed_event_attributes=Completed(
            deployment_version=Version(build_id="B", deployment_name="landed-runner")
        ),
    )
    events = [
        wft,
        scheduled(2, "landed.act", "actor-q"),
        started(3, 2, "OLD"),  # the act's build is not the verifier's
        scheduled(4, "landed.verify", "verifier-q"),
        started(5, 4, "B"),
        scheduled(6, "landed.verify", "elsewhere-q"),
        started(7, 6, "OLD"),  # a verify on another queue is not the verifier's
    ]
    assert builds_in(events, "verifier-q") == (["B"], ["B"])
    events.append(started(8, 4, "OLD"))  # a retried attempt on another build counts too
    assert builds_in(events, "verifier-q") == (["B", "OLD"], ["B"])
