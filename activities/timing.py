"""The runner times each task it settles: from its workflow run's start (which the workflow
passes with the receipt, read from its own history) to the receipt's settlement. Nothing is
asked of Temporal for it: a settle adds no round trip to the task's path."""

from __future__ import annotations

from datetime import UTC, datetime

from landed.receipts.model import Receipt
from landed.telemetry.logs import current_trace_id
from landed.telemetry.task_metrics import observe_task

__all__ = ["time_task"]


def time_task(receipt: Receipt, run_started_at: datetime | None) -> None:
    """Observe ``receipt``'s task duration, with the trace id in effect now (the settle's);
    a run that did not say when it started (older runners' histories) is not timed."""
    if run_started_at is None:
        return
    settled = receipt.settled_at or datetime.now(UTC)
    seconds = (settled - run_started_at).total_seconds()
    observe_task(max(seconds, 0.0), current_trace_id(), receipt.task_id)
