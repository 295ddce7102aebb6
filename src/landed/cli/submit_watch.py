"""``landed submit --wait``: the task's Temporal Web UI link, and its steps as they happen.

The steps are read from the workflow's history as it grows (a long poll), not from progress
queries: a step shorter than a polling interval would be missed, an event is not.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from urllib.parse import quote

from temporalio.api.enums.v1 import EventType

from landed.receipts.model import Receipt
from landed.task.names import ACT_ACTIVITY, VERIFY_ACTIVITY
from landed.temporal.handle import TaskHandle

__all__ = ["STEPS", "watch", "web_ui_base", "web_ui_link"]

#: The words --wait prints, in the order a task reaches them.
STEPS = ("pre-read", "acting", "verifying", "settled")
_CLOSED = frozenset(
    {
        EventType.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED,
        EventType.EVENT_TYPE_WORKFLOW_EXECUTION_FAILED,
        EventType.EVENT_TYPE_WORKFLOW_EXECUTION_TIMED_OUT,
        EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CANCELED,
        EventType.EVENT_TYPE_WORKFLOW_EXECUTION_TERMINATED,
        EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW,
    }
)


def web_ui_base(address: str, env: Mapping[str, str] | None = None) -> str:
    """LANDED_WEB_UI when set, else the dev server's convention: the frontend's host with its
    port plus 1000 (7233 -> 8233, as `temporal server start-dev` and `landed dev` use)."""
    env = os.environ if env is None else env
    given = env.get("LANDED_WEB_UI", "").strip().rstrip("/")
    if given:
        return given
    host, _, port = address.rpartition(":")
    if not host or not port.isdigit():
        return f"http://{address}"
    return f"http://{host}:{int(port) + 1000}"


def web_ui_link(base: str, namespace: str, task_id: str, run_id: str | None) -> str:
    path = f"{base}/namespaces/{quote(namespace, safe='')}/workflows/{quote(task_id, safe='')}"
    return f"{path}/{quote(run_id, safe='')}/history" if run_id else path


def step_of(activity: str, acted: bool) -> str | None:
    """The word for a scheduled activity: a read before any act is the pre-read."""
    if activity == ACT_ACTIVITY:
        return "acting"
    if activity == VERIFY_ACTIVITY:
        return "verifying" if acted else "pre-read"
    return None


def _say(word: str) -> None:
    print(f"  {word}", file=sys.stderr, flush=True)


async def _follow(handle: TaskHandle) -> None:
    said: set[str] = set()
    acted = False
    scheduled = EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED
    async for event in handle.workflow.fetch_history_events(wait_new_event=True):
        if event.event_type in _CLOSED:
            return
        if event.event_type != scheduled:
            continue
        name = event.activity_task_scheduled_event_attributes.activity_type.name
        word = step_of(name, acted)
        acted = acted or name == ACT_ACTIVITY
        if word is not None and word not in said:
            said.add(word)
            _say(word)


async def watch(handle: TaskHandle) -> Receipt:
    """The task's receipt, saying each step it reaches on stderr while it runs. Following the
    history is only a view: where it fails, the result alone decides."""
    try:
        await _follow(handle)
    except Exception as exc:
        print(f"  (steps not shown: {type(exc).__name__})", file=sys.stderr, flush=True)
    receipt = await handle.result()
    _say("settled")
    return receipt
