"""The runner's own steps: ``plan`` (its routing, read once per task), ``claim`` (before each
act), ``settle``, and ``lookup`` (a settled receipt for a task Temporal has forgotten)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from temporalio import activity
from temporalio.exceptions import ApplicationError

from landed.ledger.base import Claim, Ledger, LedgerConflict, UntrustedRow, canonical_json
from landed.receipts.model import Receipt, attempt_of, run_id_of
from landed.task.claim_contracts import ClaimContracts, judge_claim
from landed.task.messages import (
    ClaimInput,
    ClaimOutput,
    LookupInput,
    LookupOutput,
    PlanInput,
    Routing,
    SettleInput,
    SettleOutput,
    pre_reads,
)
from landed.task.names import CLAIM_ACTIVITY, LOOKUP_ACTIVITY, PLAN_ACTIVITY, SETTLE_ACTIVITY
from landed.telemetry.logs import task_event
from landed.telemetry.spans import settle_span
from landed.util.redact import Redactor

from .loops import loop_of, tell_tripwire
from .timing import time_task

__all__ = ["RunnerActivities"]


@contextlib.contextmanager
def _trusted_rows() -> Iterator[None]:
    """A ledger row past a break in the hash chain is never handed on: retrying cannot mend the
    chain, so the step fails for good and names the break's fix."""
    try:
        yield
    except UntrustedRow as exc:
        raise ApplicationError(str(exc), type="UntrustedRow", non_retryable=True) from exc


def _digest_of(receipt: Receipt) -> str | None:
    """The spec digest a stored receipt records (None for one that records none)."""
    value = getattr(receipt.landed, "spec_sha256", None) if receipt.landed else None
    return str(value) if value else None


class RunnerActivities:
    """Holds what only the runner may hold: the ledger and its routing configuration."""

    def __init__(
        self, ledger: Ledger, routing: Routing, contracts: ClaimContracts | None = None
    ) -> None:
        self._ledger = ledger
        self._routing = routing
        # The operator's claim contracts (LANDED_RUNNER_CLAIM_CONTRACTS), linted at load: the
        # runner, never the claim line, decides how a claimed outcome is read back.
        self._contracts = contracts
        # The receipt on the settle span goes through the evidence redactor: credential shapes,
        # and the ledger's own URL (its login may hold a password).
        self._redact = Redactor([ledger.url])

    @activity.defn(name=PLAN_ACTIVITY)
    async def plan(self, inp: PlanInput) -> Routing:
        """Where this runner sends act and verify, and the task's receipt if the ledger already
        holds one; recorded in history so replay never rereads."""
        with _trusted_rows():
            routing = await self._plan(inp)
        if inp.claim_outcome is None:
            return routing
        judged = judge_claim(self._contracts, inp.claim_outcome)
        return routing.model_copy(update={"claim_contract": judged})

    async def _plan(self, inp: PlanInput) -> Routing:
        # Nothing runs between this plan and the first act: claim it now, in the same ledger
        # transaction as the receipt check (one local activity fewer per task). Otherwise
        # (a pre-read first, or a run that will not act) only look: a run cancelled before its
        # own claim must still learn that another run may have acted (DOD-10).
        record = (
            inp.will_act
            and bool(inp.run_id)
            and not inp.gated
            and not pre_reads(self._routing, inp.pre_read, inp.steps)
        )
        earlier, other = await self._ledger.claim(
            inp.task_id,
            inp.run_id,
            1,
            inp.spec_sha256,
            record=record,
            owner=inp.owner,
            loop=inp.loop,
        )
        if earlier is None:
            found = self._claim_output(inp.task_id, inp.spec_sha256, other)
            if record:
                found = found.model_copy(update={"claimed_for": inp.run_id})
                return self._routing.model_copy(update={"claim": found})
            if found.other_run is not None:
                return self._routing.model_copy(update={"other_claim": found})
            return self._routing
        stored = _digest_of(earlier)
        if stored != inp.spec_sha256:
            # Other work under the same id, or a receipt that cannot show it is this task:
            # answering with it could call the new task done, and acting would put two tasks
            # under one id in the ledger.
            what = (
                "for a different task"
                if stored
                else "by a receipt that records no spec digest, so it cannot be confirmed to be "
                "this task"
            )
            raise ApplicationError(
                f"task id {inp.task_id!r} is already settled in the ledger ({self._ledger.url}) "
                f"{what} (stored {stored or 'none'}, this one {inp.spec_sha256}); give the new "
                f"task its own task_id",
                type="TaskIdReused",
                non_retryable=True,
            )
        return self._routing.model_copy(update={"settled": earlier})

    @activity.defn(name=CLAIM_ACTIVITY)
    async def claim(self, inp: ClaimInput) -> ClaimOutput:
        """Record in the ledger that this run is about to run act attempt ``inp.attempt``, and
        learn whether another run got that far with this task id and never settled."""
        with _trusted_rows():
            settled, other = await self._ledger.claim(
                inp.task_id,
                inp.run_id,
                inp.attempt,
                inp.spec_sha256,
                owner=inp.owner,
                loop=inp.loop,
            )
        if settled is not None:
            stored = _digest_of(settled)
            if stored != inp.spec_sha256:
                raise ApplicationError(
                    f"task id {inp.task_id!r} is already settled in the ledger "
                    f"({self._ledger.url}) for a different task (stored "
                    f"{stored or 'none'}, this one {inp.spec_sha256}); give the "
                    f"new task its own task_id",
                    type="TaskIdReused",
                    non_retryable=True,
                )
            return ClaimOutput(settled=settled, claimed_for=inp.run_id)
        out = self._claim_output(inp.task_id, inp.spec_sha256, other)
        return out.model_copy(update={"claimed_for": inp.run_id})

    @staticmethod
    def _claim_output(task_id: str, spec_sha256: str, other: Claim | None) -> ClaimOutput:
        if other is None:
            return ClaimOutput()
        if other.spec_sha256 != spec_sha256:
            raise ApplicationError(
                f"task id {task_id!r} was about to act in run {other.run_id} at "
                f"{other.claimed_at.isoformat()} for a different task (stored "
                f"{other.spec_sha256}, this one {spec_sha256}) and never settled; give the "
                f"new task its own task_id",
                type="TaskIdReused",
                non_retryable=True,
            )
        return ClaimOutput(other_run=other.run_id, other_at=other.claimed_at)

    @activity.defn(name=SETTLE_ACTIVITY)
    async def settle(self, inp: SettleInput) -> SettleOutput:
        """Append the receipt; a retry of the same (task_id, attempt) appends nothing."""
        with settle_span(inp.receipt, self._redact) as span, _trusted_rows():
            out = await self._settle(inp)
            record = out.stored or inp.receipt
            if span is not None:
                span.set_attribute("landed.appended", out.appended)
            if out.appended:
                time_task(record, inp.run_started_at)
            task_event(
                "settled",
                role="runner",
                task_id=record.task_id,
                attempt=attempt_of(record),
                verdict=record.verdict,
                appended=out.appended,
            )
        # GOV-9: a loop's task tells its loop's tripwire, after this step returns: a signal
        # whose workflow task reached this worker while the step was still in flight would
        # evict this run and cancel the step (with an empty workflow cache, again and again).
        # The tripwire drops a repeat by task id and attempt, and reads the ledger after its
        # cursor (the signal only wakes it sooner).
        if loop_of(record) is not None:  # only a loop's task asks for the activity's client
            tell_tripwire(activity.client(), activity.info().task_queue, record)
        return out

    async def _settle(self, inp: SettleInput) -> SettleOutput:
        if inp.after_unknown_write:
            later = await self._later_attempt(inp.receipt)
            if later is not None:
                # A reset to before an attempt that had failed: the run it was reset from went
                # on to a later attempt and settled it. That receipt is the task's record; this
                # run's reading of the same outcome must not settle the task a second time.
                return SettleOutput(appended=False, ledger=self._ledger.url, stored=later)
        try:
            appended = await self._ledger.append(inp.receipt)
        except LedgerConflict as exc:
            stored = await self._earlier_try(inp.receipt)
            if stored is not None:
                # An earlier try of this step appended it (the runner stopped before the
                # workflow recorded that), or another run of this task settled this attempt
                # first (a lost run whose settle committed late): the ledger's is the record.
                return SettleOutput(appended=False, ledger=self._ledger.url, stored=stored)
            # Another task's receipt under this id and attempt: retrying cannot change it.
            raise ApplicationError(str(exc), type="LedgerConflict", non_retryable=True) from exc
        return SettleOutput(appended=appended, ledger=self._ledger.url)

    @activity.defn(name=LOOKUP_ACTIVITY)
    async def lookup(self, inp: LookupInput) -> LookupOutput:
        """The task's latest settled receipt, as the board shows it; None when there is none."""
        with _trusted_rows():
            return LookupOutput(receipt=await self._ledger.latest(inp.task_id))

    async def _later_attempt(self, receipt: Receipt) -> Receipt | None:
        """The task's settled receipt of a later attempt than ``receipt``'s, if it is of the
        same task (its spec digest)."""
        latest = await self._ledger.latest(receipt.task_id)
        if latest is None or attempt_of(latest) <= attempt_of(receipt):
            return None
        digest = _digest_of(receipt)
        return latest if digest and _digest_of(latest) == digest else None

    async def _earlier_try(self, receipt: Receipt) -> Receipt | None:
        """The stored receipt of this (task_id, attempt) when it is this task's record: an
        earlier try of this settle step wrote it (the same workflow run, or, for a receipt that
        names no run, the same content but its settled_at), or another run of the same task (its
        spec digest) settled this attempt first. None for another task's receipt.

        Content is compared as the ledger stores it (canonical JSON): the stored copy has been
        through that form, which drops null fields, and the receipt at hand has not.
        """
        run_id = run_id_of(receipt)
        digest = _digest_of(receipt)
        bare = canonical_json(receipt.model_copy(update={"settled_at": None}))
        for stored in await self._ledger.get(receipt.task_id):
            if attempt_of(stored) != attempt_of(receipt):
                continue
            if run_id and run_id_of(stored) == run_id:
                return stored
            if canonical_json(stored.model_copy(update={"settled_at": None})) == bare:
                return stored
            if digest and _digest_of(stored) == digest:
                return stored
        return None
