"""LandedRolloutGate: the Temporal Worker Controller's gate for a new runner build (and the
one `landed deploy promote --gate` runs). Started pinned to the new build, it runs one canary
task as a child on its own queue (so pinned to the same build), then asks the runner what the
ledger and the canary's history say, and fails unless landed.task.canary.judge finds nothing.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ApplicationError, ChildWorkflowError

with workflow.unsafe.imports_passed_through():
    from pydantic import ValidationError

    from landed.receipts.model import Receipt
    from landed.task.canary import CanaryInput, canary_task, judge
    from landed.task.names import (
        AGENT_TASK_WORKFLOW,
        ROLLOUT_GATE_FAILED,
        ROLLOUT_GATE_WORKFLOW,
    )
    from landed.task.spec import TaskSpec
    from landed.task.steps import CanarySteps

__all__ = ["RolloutGate"]


def _fail(message: str, kind: str = ROLLOUT_GATE_FAILED) -> ApplicationError:
    return ApplicationError(message, type=kind, non_retryable=True)


def _parse(raw: Any) -> CanaryInput:
    try:
        return CanaryInput.model_validate(raw)
    except ValidationError as exc:
        raise _fail(f"the gate's input is not a canary ({exc})", "RolloutGateInput") from None


@workflow.defn(name=ROLLOUT_GATE_WORKFLOW)
class RolloutGate:
    @workflow.run
    async def run(self, raw: Any) -> dict[str, Any]:
        inp = _parse(raw)
        info = workflow.info()
        version = info.get_current_deployment_version()
        if version is None:
            raise _fail("the gate ran on an unversioned worker: there is no build to prove")
        build = version.build_id
        verifier = inp.expect_build_id or build
        # One canary per run: a gate started again under the same id runs a canary of its own.
        task_id = f"landed-canary-{info.workflow_id}-{info.run_id}"
        try:
            spec = TaskSpec.model_validate(canary_task(inp, f"{build}:{info.run_id}", task_id))
        except ValidationError as exc:
            raise _fail(f"the canary task is not a task ({exc})", "RolloutGateInput") from None
        await self._verifier_on(verifier, inp.wait_for_verifier_s)
        # A child on this queue runs on this workflow's (pinned) build.
        try:
            await workflow.execute_child_workflow(
                AGENT_TASK_WORKFLOW,
                spec,
                id=task_id,
                task_queue=info.task_queue,
                result_type=Receipt,
                execution_timeout=timedelta(seconds=inp.timeout_s),
            )
        except ChildWorkflowError as exc:
            cause = exc.cause or exc
            raise _fail(f"the canary task {task_id} did not settle: {cause}") from None
        facts = await workflow.execute_activity_method(
            CanarySteps.facts,
            task_id,
            start_to_close_timeout=timedelta(seconds=120),
            retry_policy=RetryPolicy(maximum_attempts=5),
        )
        problems = judge(facts, build, verifier)
        if problems:
            raise _fail(f"build {build} did not prove itself: " + "; ".join(problems))
        return {"build_id": build, "task_id": task_id, "facts": facts.model_dump(mode="json")}

    async def _verifier_on(self, build: str, wait_s: float) -> None:
        """The canary's reads go where the verifier's queue routes: wait for it to be ``build``."""
        current = await workflow.execute_activity_method(
            CanarySteps.verifier_current,
            args=[build, wait_s],
            start_to_close_timeout=timedelta(seconds=wait_s + 60),
            heartbeat_timeout=timedelta(seconds=60),
            retry_policy=RetryPolicy(maximum_attempts=3),
        )
        if current != build:
            raise _fail(
                f"the verifier's queue routes to {current or 'no build'}, not build {build}, "
                f"after {wait_s:g} s: release the verifier first"
            )
