"""The ledger steps' budgets, and the claim step that records a run is about to act.

A claim answer a run holds always counts for it: the data in history decides, never the run
id (a replay may not see the run's own id) nor a patch marker. A run reset from another whose
history kept the old run's claim but not its act schedules the act under that claim; the actor
runs an act only for the run its claim names (``ActInput.claimed_for``), so it refuses it before
anything runs, and the task reads back and settles as one whose other run may have acted
(``landed.workflows.acting``). The refusal is an event in history, so replay follows it.
"""

from __future__ import annotations

import dataclasses
from datetime import timedelta

from temporalio import workflow
from temporalio.common import RetryPolicy

with workflow.unsafe.imports_passed_through():
    from landed.task.decisions import ledger_tries
    from landed.task.messages import ClaimInput, ClaimOutput
    from landed.task.spec import TaskSpec
    from landed.task.steps import RunnerSteps

__all__ = ["SETTLE_RETRY", "claim", "ledger_policy"]

_LOCAL = timedelta(seconds=30)
# Reading the routing and the ledger: a task id reused for other work cannot succeed later.
# The ledger append is idempotent on (task_id, attempt, stage): the task's settle and a
# recheck's row keep trying until written, except when the same row is already stored with
# other content (a retry cannot fix that).
SETTLE_RETRY = RetryPolicy(
    initial_interval=timedelta(seconds=1),
    maximum_interval=timedelta(seconds=30),
    non_retryable_error_types=("LedgerConflict",),
)

_PLAN_RETRY = RetryPolicy(
    initial_interval=timedelta(seconds=1),
    maximum_interval=timedelta(seconds=30),
    non_retryable_error_types=("TaskIdReused",),
)


def ledger_policy(budget: timedelta) -> tuple[RetryPolicy, timedelta]:
    """The plan's retry policy and the time one try may take, all within ``budget``
    (``landed.task.decisions.ledger_tries`` says why it is counted)."""
    policy = _PLAN_RETRY
    assert policy.maximum_interval is not None
    tries, one_try = ledger_tries(
        budget,
        initial=policy.initial_interval,
        backoff=policy.backoff_coefficient,
        longest_wait=policy.maximum_interval,
        one_try_at_most=_LOCAL,
    )
    return dataclasses.replace(policy, maximum_attempts=tries), one_try


async def claim(spec: TaskSpec, digest: str, attempt: int, left: timedelta) -> ClaimOutput:
    """Record in the ledger that this run is about to run act attempt ``attempt``."""
    retry, one_try = ledger_policy(left)
    out: ClaimOutput = await workflow.execute_local_activity_method(
        RunnerSteps.claim,
        ClaimInput(
            task_id=spec.task_id,
            run_id=workflow.info().run_id,
            attempt=attempt,
            spec_sha256=digest,
            owner=spec.owner,
            loop=spec.loop,
        ),
        # A ledger that stays down ends the attempts by the time cap (read back and settled
        # like any other end); either way no act starts unclaimed.
        start_to_close_timeout=one_try,
        schedule_to_close_timeout=left,
        retry_policy=retry,
    )
    return out
