"""The runner's own steps: ``plan`` (its routing, read once per task) and ``settle``."""

from __future__ import annotations

from temporalio import activity
from temporalio.exceptions import ApplicationError

from landed._ledger import Ledger, LedgerConflict
from landed._task import (
    PLAN_ACTIVITY,
    SETTLE_ACTIVITY,
    PlanInput,
    Routing,
    SettleInput,
    SettleOutput,
)

__all__ = ["RunnerActivities"]


class RunnerActivities:
    """Holds what only the runner may hold: the ledger and its routing configuration."""

    def __init__(self, ledger: Ledger, routing: Routing) -> None:
        self._ledger = ledger
        self._routing = routing

    @activity.defn(name=PLAN_ACTIVITY)
    async def plan(self, inp: PlanInput) -> Routing:
        """Where this runner sends act and verify; recorded in history so replay never rereads."""
        return self._routing

    @activity.defn(name=SETTLE_ACTIVITY)
    async def settle(self, inp: SettleInput) -> SettleOutput:
        """Append the receipt; a retry of the same (task_id, attempt) appends nothing."""
        try:
            appended = await self._ledger.append(inp.receipt)
        except LedgerConflict as exc:
            # The same attempt with different content: retrying cannot change the ledger.
            raise ApplicationError(str(exc), type="LedgerConflict", non_retryable=True) from exc
        return SettleOutput(appended=appended, ledger=self._ledger.url)
