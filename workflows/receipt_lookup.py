"""ReceiptLookup: hands a client the receipt the runner's ledger holds for a task id."""

from __future__ import annotations

from datetime import timedelta

from temporalio import workflow
from temporalio.common import RetryPolicy

with workflow.unsafe.imports_passed_through():
    from landed.task.messages import LookupInput, LookupOutput
    from landed.task.names import LOOKUP_WORKFLOW
    from landed.task.steps import RunnerSteps

__all__ = ["ReceiptLookup"]

# A ledger read has no side effect: a runner that could not answer is asked again, for a
# while, then the caller is told (it asked for a receipt, not for a wait without end).
_READ_RETRY = RetryPolicy(
    initial_interval=timedelta(milliseconds=200),
    maximum_interval=timedelta(seconds=2),
    maximum_attempts=5,
)


@workflow.defn(name=LOOKUP_WORKFLOW)
class ReceiptLookup:
    """The settled receipt of a task whose own run Temporal no longer holds (its retention).

    The agent's client holds no ledger credentials and must not: the runner, which does, reads
    the ledger for it. Nothing is acted, read back or settled here.
    """

    @workflow.run
    async def run(self, inp: LookupInput) -> LookupOutput:
        out: LookupOutput = await workflow.execute_local_activity_method(
            RunnerSteps.lookup,
            inp,
            start_to_close_timeout=timedelta(seconds=10),
            retry_policy=_READ_RETRY,
        )
        return out
