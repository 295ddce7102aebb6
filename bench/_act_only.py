"""The baseline workflow of the throughput bench: the same act, and nothing else."""

from __future__ import annotations

from temporalio import workflow
from temporalio.common import RetryPolicy

with workflow.unsafe.imports_passed_through():
    from landed._task import ACT_ACTIVITY, ActInput, ActReport, TaskSpec

__all__ = ["ActOnly"]


@workflow.defn(name="BenchActOnly")
class ActOnly:
    """Runs the task's act on the actor queue once and returns its report: no pre-read, no
    read-back, no grading, no ledger. What an orchestrator without landed would do.

    The act is scheduled exactly as AgentTask schedules it (time cap, heartbeat timeout, one
    attempt, wait for a cancel to complete), so the two differ only by what landed adds.
    """

    @workflow.run
    async def run(self, spec: TaskSpec) -> ActReport:
        queue = workflow.memo_value("actor_task_queue", type_hint=str)
        report: ActReport = await workflow.execute_activity(
            ACT_ACTIVITY,
            ActInput(
                task_id=spec.task_id,
                attempt=1,
                idempotency_key=spec.idempotency_key or spec.task_id,
                act=spec.act,
            ),
            result_type=ActReport,
            task_queue=queue,
            schedule_to_close_timeout=spec.time_cap,
            heartbeat_timeout=spec.timeouts.act_heartbeat,
            retry_policy=RetryPolicy(maximum_attempts=1),
            cancellation_type=workflow.ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
        )
        return report
