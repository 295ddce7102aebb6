"""The ledger's witness: the runner's signed heads, kept in a history the ledger's owner cannot
rewrite (rules: landed.ledger.witness).

One per runner head key (a fixed id). The runner sends each head it signs as an Update; its
validator refuses a head another key signed, one below the latest held and one whose link
differs at a held position, and the refusal reaches the sender (nothing is recorded for it).
As it stops (its worker gone, so no Update is accepted) it signals the last head instead;
Temporal records the signal at once and the witness applies the same rules when a runner next
runs it, keeping the refusal in its state.
An accepted head goes into the memo, so `landed ledger verify --witness` reads the latest heads
with one describe, answered by Temporal alone. The run continues as new before its history
grows large, carrying the heads it holds.
"""

from __future__ import annotations

from temporalio import workflow
from temporalio.exceptions import ApplicationError

with workflow.unsafe.imports_passed_through():
    from landed.ledger.witness import (
        WITNESS_HEADS_MEMO,
        WITNESS_QUERY,
        WITNESS_SIGNAL,
        WITNESS_UPDATE,
        WITNESS_WORKFLOW,
        WitnessHead,
        WitnessState,
        accept,
        offered,
        refusal,
    )

__all__ = ["Witness"]


@workflow.defn(name=WITNESS_WORKFLOW)
class Witness:
    """Started by the runner's first head (update-with-start); never ends by itself."""

    @workflow.init
    def __init__(self, state: WitnessState) -> None:
        since = state.since or workflow.now()
        self._state = state.model_copy(update={"since": since})
        self._accepted = 0

    @workflow.update(name=WITNESS_UPDATE)
    def witness(self, head: WitnessHead) -> int:
        """Hold ``head``; returns the latest position held."""
        self._state = accept(self._state, head)
        self._accepted += 1
        workflow.upsert_memo({WITNESS_HEADS_MEMO: self._state})
        return self._state.heads[-1].pos

    @witness.validator
    def _check(self, head: WitnessHead) -> None:
        problem = refusal(self._state, head)
        if problem is not None:
            raise ApplicationError(problem, type="HeadRefused", non_retryable=True)

    @workflow.signal(name=WITNESS_SIGNAL)
    def witness_signalled(self, head: WitnessHead) -> None:
        """The runner's last head as it stops: held by the same rules, a refusal kept."""
        self._state = offered(self._state, head)
        self._accepted += 1
        workflow.upsert_memo({WITNESS_HEADS_MEMO: self._state})

    @workflow.query(name=WITNESS_QUERY)
    def heads(self) -> WitnessState:
        return self._state

    @workflow.run
    async def run(self, state: WitnessState) -> None:
        await workflow.wait_condition(
            lambda: (
                self._accepted >= self._state.per_run
                or workflow.info().is_continue_as_new_suggested()
            )
        )
        await workflow.wait_condition(workflow.all_handlers_finished)
        workflow.continue_as_new(self._state, memo={WITNESS_HEADS_MEMO: self._state})
