"""Temporal floors with exactly the steps of landed's two flows and nothing in their bodies.

Each floor schedules what AgentTask schedules for a task with one plan step, at confirmation
interval 0 (read from a recorded history): the same activities on the same task queues (the
act on the actor's, the reads on the verifier's, the fleet gate on the workflow's own), the
same local activities where AgentTask plans, claims and settles (empty here), the same patch
markers (each also upserts Temporal's change-version attribute, as AgentTask's do), the same
search attributes at start and at the end, and no timer, signal or query. The act and the
reads are the real ones, so a landed flow and its floor differ by what landed's own steps do:
the ledger, routing, grading and the gate's read of the fleet switch.
"""

from __future__ import annotations

from datetime import timedelta

from temporalio import activity, workflow
from temporalio.common import RetryPolicy, SearchAttributeKey

with workflow.unsafe.imports_passed_through():
    from landed.task.spec import TaskSpec

from bench._act_only import act, empty_local, read

__all__ = ["DEFAULT_STEPS", "LEAN_STEPS", "DefaultSteps", "LeanSteps", "gate"]

#: What each flow schedules, in order (AgentTask's, and its floor's): printed beside its cost.
LEAN_STEPS = (
    "patch marker",
    "local plan",
    "gate activity (runner queue)",
    "local claim",
    "act (actor queue)",
    "read (verifier queue)",
    "patch marker",
    "confirmation read (verifier queue)",
    "local settle",
    "search attributes",
)
DEFAULT_STEPS = (
    *LEAN_STEPS[:2],
    "pre-read (verifier queue)",
    *LEAN_STEPS[2:],
)

_VERDICT = SearchAttributeKey.for_keyword("LandedVerdict")
_RUNG = SearchAttributeKey.for_keyword("LandedRung")
# As AgentTask asks the gate: one try at a time, heartbeating, on the workflow's own queue.
_GATE_RETRY = RetryPolicy(
    initial_interval=timedelta(seconds=1), maximum_interval=timedelta(seconds=5)
)


@activity.defn(name="bench.gate")
async def gate(task_id: str) -> bool:
    """Does nothing: stands where AgentTask's gate reads the fleet switch."""
    return True


async def _gate(spec: TaskSpec) -> None:
    await workflow.execute_activity(
        gate,
        spec.task_id,
        task_queue=workflow.info().task_queue,
        start_to_close_timeout=timedelta(seconds=45),
        schedule_to_close_timeout=spec.time_cap,
        heartbeat_timeout=timedelta(seconds=10),
        retry_policy=_GATE_RETRY,
    )


async def _steps(spec: TaskSpec, pre_read: bool) -> bool:
    workflow.patched("bench-steps-plan")
    await empty_local(spec)
    if pre_read:
        await read(spec, "before")
    await _gate(spec)
    await empty_local(spec)
    await act(spec)
    await read(spec, "after")
    workflow.patched("bench-steps-confirm")
    passed = await read(spec, "after")
    await empty_local(spec)
    workflow.upsert_search_attributes(
        [_VERDICT.value_set("verified" if passed else "failed"), _RUNG.value_set("verified")]
    )
    return passed


@workflow.defn(name="BenchLeanSteps")
class LeanSteps:
    """The lean flow's steps (``LEAN_STEPS``), empty where landed does its own work."""

    @workflow.run
    async def run(self, spec: TaskSpec) -> bool:
        """True when the confirmation read read back as a pass."""
        return await _steps(spec, pre_read=False)


@workflow.defn(name="BenchDefaultSteps")
class DefaultSteps:
    """The default flow's steps (``DEFAULT_STEPS``), empty where landed does its own work."""

    @workflow.run
    async def run(self, spec: TaskSpec) -> bool:
        """True when the confirmation read read back as a pass."""
        return await _steps(spec, pre_read=True)
