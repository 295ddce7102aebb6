"""The throughput bench's reference workflows: the same act alone (the baseline), the same act
followed by one read on the verifier (the floor), and the floor with two empty local activities
where AgentTask has its plan and settle steps (what those two steps cost before any ledger work)."""

from __future__ import annotations

from datetime import timedelta

from temporalio import activity, workflow
from temporalio.common import RetryPolicy

with workflow.unsafe.imports_passed_through():
    # The read is retried exactly as AgentTask retries it.
    from landed.task.messages import ActInput, ActReport, ReadPhase, VerifyInput, VerifyOutput
    from landed.task.spec import TaskSpec
    from landed.task.steps import Act, Verify
    from landed.workflows.agent_task import VERIFY_RETRY

__all__ = [
    "ActOnly",
    "ActThenRead",
    "ActThenReadWithLocalSteps",
    "act",
    "empty_local",
    "local_step",
    "read",
]


async def act(spec: TaskSpec) -> ActReport:
    """The task's act on the actor queue, scheduled exactly as AgentTask schedules it."""
    queue = workflow.memo_value("actor_task_queue", type_hint=str)
    report: ActReport = await workflow.execute_activity_method(
        Act.act,
        ActInput(
            task_id=spec.task_id,
            attempt=1,
            idempotency_key=spec.idempotency_key or spec.task_id,
            act=spec.act,
        ),
        task_queue=queue,
        schedule_to_close_timeout=spec.time_cap,
        heartbeat_timeout=spec.timeouts.act_heartbeat,
        retry_policy=RetryPolicy(maximum_attempts=1),
        cancellation_type=workflow.ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
    )
    return report


@workflow.defn(name="BenchActOnly")
class ActOnly:
    """Runs the task's act on the actor queue once and returns its report: no pre-read, no
    read-back, no grading, no ledger. What an orchestrator without landed would do.

    The act is scheduled exactly as AgentTask schedules it (time cap, heartbeat timeout, one
    attempt, wait for a cancel to complete), so the two differ only by what landed adds.
    """

    @workflow.run
    async def run(self, spec: TaskSpec) -> ActReport:
        return await act(spec)


@activity.defn(name="bench.local_step")
async def local_step(task_id: str) -> str:
    """Does nothing: stands where AgentTask reads or writes its ledger."""
    return task_id


async def empty_local(spec: TaskSpec) -> None:
    """An empty local activity, where AgentTask reads or writes its ledger."""
    await workflow.execute_local_activity(
        local_step, spec.task_id, start_to_close_timeout=timedelta(seconds=30)
    )


async def read(spec: TaskSpec, phase: ReadPhase = "after") -> bool:
    """One read of every plan step on the verifier (``phase`` "before" is the pre-read); True
    when each read back as a pass."""
    queue = workflow.memo_value("verifier_task_queue", type_hint=str)
    every = list(range(len(spec.proof_plan)))
    out: VerifyOutput = await workflow.execute_activity_method(
        Verify.verify,
        VerifyInput(
            task_id=spec.task_id,
            attempt=1,
            phase=phase,
            contracts=list(spec.proof_plan),
            indexes=every,
            before=[None] * len(every),
            run_id=workflow.info().run_id,
            request=str(workflow.uuid4()),
            steps=len(spec.proof_plan),
        ),
        task_queue=queue,
        schedule_to_close_timeout=spec.time_cap,
        start_to_close_timeout=spec.timeouts.verify,
        heartbeat_timeout=spec.timeouts.verify_heartbeat,
        retry_policy=VERIFY_RETRY,
    )
    return all(r.proof.result == "pass" for r in out.readings)


@workflow.defn(name="BenchActThenRead")
class ActThenRead:
    """The same act, then one read of the plan on the verifier queue, and nothing else: no
    routing read, no grading, no ledger. The floor the target names (one extra round trip)."""

    @workflow.run
    async def run(self, spec: TaskSpec) -> bool:
        """True when every step read back as a pass."""
        await act(spec)
        return await read(spec)


@workflow.defn(name="BenchActThenReadWithLocalSteps")
class ActThenReadWithLocalSteps:
    """The floor with an empty local activity before the act and one after the read, where
    AgentTask plans (and claims) and settles: what those two steps cost in the SDK alone."""

    @workflow.run
    async def run(self, spec: TaskSpec) -> bool:
        """True when every step read back as a pass."""
        await empty_local(spec)
        await act(spec)
        passed = await read(spec)
        await empty_local(spec)
        return passed
