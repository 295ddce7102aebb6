"""LoopRun: a loop Schedule's action. It derives the run's task id from the time the Schedule
meant it for, starts that task and waits for it: a catch-up, a double fire or a restarted server
asks for the same id again, and one task id never runs twice. Waiting is what lets the
Schedule's overlap policy hold the tasks themselves: a run is still going while its task is."""

from __future__ import annotations

import contextlib
from datetime import datetime

from temporalio import workflow
from temporalio.common import (
    SearchAttributeKey,
    SearchAttributePair,
    TypedSearchAttributes,
    WorkflowIDReusePolicy,
)
from temporalio.exceptions import ChildWorkflowError, WorkflowAlreadyStartedError

with workflow.unsafe.imports_passed_through():
    from landed.loops.spec import LoopSpec, loop_task, run_task_id
    from landed.task.names import AGENT_TASK_WORKFLOW, LOOP_ATTRIBUTE, LOOP_RUN_WORKFLOW

__all__ = ["LoopRun"]

# Set by Temporal on every workflow a Schedule starts: the time the run was scheduled for.
_SCHEDULED = SearchAttributeKey.for_datetime("TemporalScheduledStartTime")
_OWNER = SearchAttributeKey.for_keyword("LandedOwner")
_LOOP = SearchAttributeKey.for_keyword(LOOP_ATTRIBUTE)


@workflow.defn(name=LOOP_RUN_WORKFLOW)
class LoopRun:
    @workflow.run
    async def run(self, spec: LoopSpec) -> str:
        scheduled: datetime = (
            workflow.info().typed_search_attributes.get(_SCHEDULED) or workflow.now()
        )
        task = loop_task(spec, run_task_id(spec.name, scheduled))
        try:
            child = await workflow.start_child_workflow(
                AGENT_TASK_WORKFLOW,
                task,
                id=task.task_id,
                # A closed run of this id is that scheduled run, done: never a second act.
                id_reuse_policy=WorkflowIDReusePolicy.REJECT_DUPLICATE,
                # A loop deleted, or its run terminated, never cancels a task mid-act.
                parent_close_policy=workflow.ParentClosePolicy.ABANDON,
                search_attributes=TypedSearchAttributes(
                    [SearchAttributePair(_OWNER, task.owner), SearchAttributePair(_LOOP, spec.name)]
                ),
            )
        except WorkflowAlreadyStartedError:
            return task.task_id  # this scheduled time's task runs (or ran) already
        # The task settles its own receipt, whatever its verdict; a task that failed is the
        # tripwire's to see, not a reason to fail the Schedule's run.
        with contextlib.suppress(ChildWorkflowError):
            await child
        return task.task_id
