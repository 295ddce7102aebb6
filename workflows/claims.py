"""The ledger steps' budgets, and whether a claim answer a run holds counts for it."""

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

from landed.workflows.versions import CLAIM_AGAIN_AFTER_RESET, claim_again_patch

__all__ = ["CLAIM_AGAIN_AFTER_RESET", "claim", "claim_holds", "ledger_policy"]

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


def claim_holds(out: ClaimOutput, attempt: int) -> bool:
    """The first claim answer a run holds for act attempt ``attempt`` counts for this run:
    recorded for it (or by a runner that did not say for whom), or recorded for the run this
    one was reset from, in a part of the history that went on to act on it.

    A reset keeps the history up to the workflow task it restarts. Where that history acts on
    the old run's claim, replay must do as the old run did; where this run schedules the act
    itself (the claim's marker sat in an earlier workflow task than the act), it must claim
    again as itself (and that second answer is its own: callers do not ask again). A patch
    marker per attempt records which: patched() is False only while replaying a workflow task
    that did not record it (one of the old run's).

    The run id is compared only when the decision is made for the first time; replayed, the
    recorded marker alone decides. A replay may not see this run's id (Temporal's Replayer
    takes a reset run's id from its first event, which is the old run's), and a decision taken
    from it there would replay another branch than the run took.

    One case the marker cannot tell: Temporal may complete the claim's workflow task before the
    workflow answered it (seen under load), so the claim's marker sits in one workflow task and
    the act in the next, while replay hands the claim back inside the first. A reset to the
    act's task then replays the old run's claim, finds no marker saying otherwise and schedules
    the act anew. The act carries the run its claim was recorded for (``claimed_for``), and the
    actor runs it only for that run: the reset run's act is refused before it runs, and the
    task settles as one whose other run may have acted (``landed.workflows.acting``).
    """
    if out.claimed_for is None:
        return True
    if workflow.unsafe.is_replaying_history_events():
        return not workflow.patched(claim_again_patch(attempt))
    if out.claimed_for == workflow.info().run_id:
        return True
    return not workflow.patched(claim_again_patch(attempt))
