"""The baseline workflow of the throughput bench: the same act, and nothing else."""

from __future__ import annotations

from datetime import timedelta

from temporalio import workflow
from temporalio.common import RetryPolicy

with workflow.unsafe.imports_passed_through():
    from landed._task import ACT_ACTIVITY, ActInput, ActReport, TaskSpec

__all__ = ["ActOnly"]


@workflow.defn(name="BenchActOnly")
class ActOnly:
    """Runs the task's act on the actor queue once and returns its report: no pre-read, no
    read-back, no grading, no ledger. What an orchestrator without landed would do."""

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
            start_to_close_timeout=timedelta(minutes=5),
            retry_policy=RetryPolicy(maximum_attempts=1),
        )
        return report
