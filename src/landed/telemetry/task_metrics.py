"""The runner's task-duration histogram: from a task's start (its workflow run's) to its receipt
in the ledger, observed once per appended receipt with the task's trace id as an exemplar.

The settle-latency SLO (deploy/prometheus/slos.yaml) counts the tasks under 300 s from it; an
exemplar leads from a slow bucket on a dashboard to the trace of one task in it.
"""

from __future__ import annotations

import math

from prometheus_client import CollectorRegistry, Histogram

__all__ = ["BUCKETS", "REGISTRY", "exemplar_labels", "observe_task"]

#: OpenMetrics caps an exemplar's label names and values at 128 UTF-8 characters together.
_EXEMPLAR_MAX = 128

#: Seconds; 300 is the settle-latency SLO's threshold and must stay one of them.
BUCKETS = (1.0, 5.0, 15.0, 30.0, 60.0, 120.0, 300.0, 600.0, 1800.0, 3600.0, 21600.0, math.inf)

REGISTRY = CollectorRegistry(auto_describe=True)
TASK_DURATION = Histogram(
    "landed_task_duration_seconds",
    "From a task's start to its receipt in the ledger, per appended receipt.",
    buckets=BUCKETS,
    registry=REGISTRY,
)


def exemplar_labels(trace_id: str, task_id: str) -> dict[str, str]:
    """The trace id, and the task id too where both fit (a dashboard links each: the trace,
    and the task's page in the Temporal Web UI)."""
    labels = {"trace_id": trace_id, "task_id": task_id}
    if sum(len(k) + len(v) for k, v in labels.items()) > _EXEMPLAR_MAX:
        del labels["task_id"]
    return labels


def observe_task(seconds: float, trace_id: str | None, task_id: str = "") -> None:
    if not math.isfinite(seconds) or seconds < 0:
        return
    exemplar = exemplar_labels(trace_id, task_id) if trace_id else None
    TASK_DURATION.observe(seconds, exemplar=exemplar)
