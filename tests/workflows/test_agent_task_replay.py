"""AgentTask's recorded histories replay with the current workflow code, in the shared and the
strict sandbox; a workflow task graded again after a stalled runner settles the same receipt."""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from helpers.agent_task import agent_roles, read_back
from helpers.histories import HISTORIES
from helpers.relay import relayed
from helpers.replay import on_local_activity, record_history, replays_as_recorded
from helpers.sor import Site, make_rows_db, publish_task, rows_task
from temporalio.client import WorkflowHistory
from temporalio.worker import Interceptor, Replayer, StartLocalActivityInput
from temporalio.workflow import ActivityHandle

from landed.ledger.base import canonical_json
from landed.task.messages import SettleInput
from landed.task.names import SETTLE_ACTIVITY
from landed.temporal.plugin import landed_plugin
from landed.workflows.agent_task import AgentTask


async def test_replay_recorded_histories(
    temporal_dev: str, tmp_path: Path, db: Path, site: Site
) -> None:
    """Histories recorded now replay with the current workflow code (and so does the
    committed one): a change that breaks determinism fails here."""
    site.save_then_fail = 1
    async with agent_roles(temporal_dev, tmp_path, db, site) as roles:
        await roles.client.run(rows_task("replay-ok", db, expect=2, batch="rp", write=2))
        await roles.client.run(publish_task("replay-dod10", "rp"))
        await roles.client.run(
            rows_task(
                "replay-rerun", db, expect=1, batch="rr", write=1, fail="before", fail_attempts=1
            )
        )
        # A malformed report after the write: read back as an unknown write (DOD-10).
        bad = rows_task("replay-badreport", db, expect=3, batch="rb")
        bad["act"] = {"name": "test.rows_bad_report", "input": {"batch": "rb"}}
        await roles.client.run(bad)
        # Reads that observed nothing, read again after a backoff timer (before and after).
        site.count_unavailable = 2
        await roles.client.run(publish_task("replay-reread", "rq"))
        histories = [
            await roles.temporal.get_workflow_handle(wid).fetch_history()
            for wid in (
                "replay-ok",
                "replay-dod10",
                "replay-rerun",
                "replay-badreport",
                "replay-reread",
            )
        ]
    record_history("dod10", histories[1])
    record_history("rerun", histories[2])
    record_history("badreport", histories[3])
    record_history("reread", histories[4])
    committed = sorted(HISTORIES.glob("*.json"))
    assert committed, "tests/histories/ holds at least one recorded AgentTask history"
    for path in committed:
        histories.append(WorkflowHistory.from_json(path.stem, json.loads(path.read_text())))
    await replays_as_recorded(histories)


def _settle_inputs(seen: list[SettleInput]) -> Interceptor:
    """Keeps in ``seen`` what each replayed run hands to its settle step (the receipt it
    graded)."""

    def hook(
        input: StartLocalActivityInput,
        start: Callable[[StartLocalActivityInput], ActivityHandle[Any]],
    ) -> ActivityHandle[Any]:
        if input.activity == SETTLE_ACTIVITY:
            seen.append(input.args[0])
        return start(input)

    return on_local_activity(hook)


def _graded_again_later(history: WorkflowHistory, later: timedelta) -> WorkflowHistory:
    """``history`` cut at the workflow task that graded and settled the task, with that task
    timed out and started again ``later``: what Temporal records when a runner stalls (a long
    pause, an overloaded machine) after the settle step wrote the ledger but before the task
    completed."""
    data = json.loads(history.to_json())
    events = data["events"]
    marker = max(i for i, e in enumerate(events) if e["eventType"] == "EVENT_TYPE_MARKER_RECORDED")
    started = max(
        i
        for i, e in enumerate(events[:marker])
        if e["eventType"] == "EVENT_TYPE_WORKFLOW_TASK_STARTED"
    )
    kept = events[: started + 1]
    started_id = kept[-1]["eventId"]
    scheduled_id = kept[-1]["workflowTaskStartedEventAttributes"]["scheduledEventId"]
    (scheduled,) = (e for e in kept if e["eventId"] == scheduled_id)
    began = datetime.fromisoformat(kept[-1]["eventTime"].replace("Z", "+00:00"))

    def stamp(at: datetime) -> str:
        return at.strftime("%Y-%m-%dT%H:%M:%S.%fZ")

    base = int(started_id)
    # Temporal hands a timed-out task to the worker's normal queue, not its sticky one.
    sticky = scheduled["workflowTaskScheduledEventAttributes"]["taskQueue"]
    queue = {"name": sticky.get("normalName") or sticky["name"], "kind": "TASK_QUEUE_KIND_NORMAL"}
    timed_out = stamp(began + timedelta(seconds=10))
    assert scheduled["eventType"] == "EVENT_TYPE_WORKFLOW_TASK_SCHEDULED"
    kept += [
        {
            "eventId": str(base + 1),
            "eventTime": timed_out,
            "eventType": "EVENT_TYPE_WORKFLOW_TASK_TIMED_OUT",
            "workflowTaskTimedOutEventAttributes": {
                "scheduledEventId": scheduled_id,
                "startedEventId": started_id,
                "timeoutType": "TIMEOUT_TYPE_START_TO_CLOSE",
            },
        },
        {
            "eventId": str(base + 2),
            "eventTime": timed_out,
            "eventType": "EVENT_TYPE_WORKFLOW_TASK_SCHEDULED",
            "workflowTaskScheduledEventAttributes": {
                "taskQueue": queue,
                "startToCloseTimeout": "10s",
                "attempt": 2,
            },
        },
        {
            "eventId": str(base + 3),
            "eventTime": stamp(began + later),
            "eventType": "EVENT_TYPE_WORKFLOW_TASK_STARTED",
            "workflowTaskStartedEventAttributes": {
                "scheduledEventId": str(base + 2),
                "identity": "runner-after-a-stall",
                "requestId": str(uuid.uuid4()),
            },
        },
    ]
    data["events"] = kept
    return WorkflowHistory.from_json(history.workflow_id, data)


async def test_a_task_graded_again_after_a_stalled_runner_settles_the_same_receipt(
    temporal_dev: str, tmp_path: Path, db: Path
) -> None:
    """The runner marks a relayed reading not observed while it grades. If that workflow task
    runs again later (the runner stalled after the ledger append), the receipt it grades must
    be the one already stored, bar its settle time: otherwise the ledger refuses it as a
    conflict and the settled task fails."""
    make_rows_db(db, preexisting=45, batch="pre")
    async with relayed(temporal_dev, tmp_path, db, "no-before") as roles:
        receipt = await roles.client.run(rows_task("stall-1", db, expect=45, batch="pre"))
        history = await roles.temporal.get_workflow_handle("stall-1").fetch_history()
    (proof,) = read_back(receipt)
    assert proof.result == "probe-error" and proof.checked_by == receipt.verdict_by
    seen: list[SettleInput] = []
    replayer = Replayer(
        workflows=[AgentTask], plugins=[landed_plugin()], interceptors=[_settle_inputs(seen)]
    )
    await replayer.replay_workflow(history)
    await replayer.replay_workflow(_graded_again_later(history, timedelta(minutes=3)))
    first, again = (inp.receipt for inp in seen)
    assert again.settled_at is not None and first.settled_at is not None
    assert again.settled_at - first.settled_at > timedelta(minutes=3) - timedelta(seconds=1)
    assert canonical_json(again.model_copy(update={"settled_at": None})) == canonical_json(
        first.model_copy(update={"settled_at": None})
    )
    assert canonical_json(first) == canonical_json(receipt)
