"""What open workflows wait on: appended to a test's failure so a stall names its workflow."""

from __future__ import annotations

from temporalio.api.enums.v1 import EventType
from temporalio.api.history.v1 import HistoryEvent
from temporalio.client import Client

__all__ = ["open_workflows"]


async def open_workflows(temporal: Client, limit: int = 50) -> str:
    """One line per open workflow: id, type, pending workflow task (state, attempt) and the
    last few event types of its history."""
    lines = []
    async for wf in temporal.list_workflows("ExecutionStatus = 'Running'", limit=limit):
        handle = temporal.get_workflow_handle(wf.id, run_id=wf.run_id)
        try:
            raw = (await handle.describe()).raw_description
            pending = raw.pending_workflow_task
            wft = (
                f"wft={pending.state} attempt={pending.attempt}"
                if raw.HasField("pending_workflow_task")
                else "no wft"
            )
            events = [e async for e in handle.fetch_history_events()]
            tail = " ".join(_event(e) for e in events[-6:])
        except Exception as err:  # a report of a stall must not fail on one workflow
            wft, tail = f"describe failed: {err!r}", ""
        lines.append(f"{wf.id} [{wf.workflow_type}] {wft} last={tail}")
    return "\n".join(lines) or "(no open workflows)"


def _event(event: HistoryEvent) -> str:
    """An event's type, time and, for a workflow task's start, the worker that took it."""
    name = EventType.Name(event.event_type).removeprefix("EVENT_TYPE_")
    when = event.event_time.ToDatetime().strftime("%H:%M:%S.%f")[:-3]
    who = ""
    if event.HasField("workflow_task_started_event_attributes"):
        who = f" by {event.workflow_task_started_event_attributes.identity}"
    return f"{name}@{when}{who}"
