"""The gates between plan and act: a person's approval (GOV-5) and consent before contact
(GOV-6). Orchestration only: who may decide and what a refusal means is ``landed.governance.gates``
and ``landed.governance.consent``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import timedelta

from temporalio import workflow
from temporalio.common import RetryPolicy, SearchAttributeKey
from temporalio.exceptions import ActivityError, ApplicationError

with workflow.unsafe.imports_passed_through():
    from landed.governance.approvers import signed_refusal
    from landed.governance.consent import blocked_report, unreadable, with_consent
    from landed.governance.gates import (
        ApprovalDecision,
        Approve,
        GateView,
        Reject,
        approvers_text,
        gate_kind,
        held_report,
        refusal,
        rejected_report,
        with_gate,
    )
    from landed.receipts.model import Receipt
    from landed.task.gate_messages import ConsentInput, ConsentOutput
    from landed.task.messages import ActReport, Routing, Step, spec_digest
    from landed.task.spec import TaskSpec
    from landed.task.steps import Consent

from landed.workflows.errors import cause
from landed.workflows.reads import chain_run_id
from landed.workflows.state import ActFacts, RunState

__all__ = ["GATE_MEMO", "Gates"]

_RUNG = SearchAttributeKey.for_keyword("LandedRung")
#: The memo key ``landed held`` reads: what waits, since when, until when, and who may approve.
GATE_MEMO = "landed.gate"
# A consent read is one bounded query; a second try covers a verifier lost mid-read.
_CONSENT_RETRY = RetryPolicy(maximum_attempts=2, initial_interval=timedelta(seconds=1))


class Gates:
    """The task's gates and what they decided, for the receipt and the queries."""

    def __init__(
        self,
        spec: TaskSpec,
        run: RunState,
        act: ActFacts,
        cancelled: Callable[[BaseException], bool],
    ) -> None:
        self._spec, self._run, self._act, self._cancelled = spec, run, act, cancelled
        self.kind = gate_kind(spec)
        self.view = GateView(kind=self.kind, approvers=approvers_text(spec))
        self.consent: ConsentOutput | None = None

    # --- the approval gate ---------------------------------------------------------------------

    def refuse(self, decision: Approve | Reject) -> None:
        """The Update validators: raise when ``decision`` is not accepted. Who decides is the
        holder of a trusted approver key that signed this very decision (task, run, spec)."""
        routing = self._run.routing
        trust = routing.approval if routing is not None else None
        seen = [a for a in (*self._act.actors, self._run.report and self._run.report.actor) if a]
        # The actor role's configured identity too: before the first act nothing was seen.
        actors = [*seen, *(trust.actor_identities if trust is not None else [])]
        kind = "approve" if isinstance(decision, Approve) else "reject"
        why = refusal(
            self._spec,
            decision.by,
            waiting=self.view.waiting,
            decided=self.view.decision,
            actors=actors,
            groups=trust.groups if trust is not None else None,
        ) or signed_refusal(
            decision.signed,
            by=decision.by,
            decision=kind,
            trust=trust,
            task_id=self._spec.task_id,
            run_id=chain_run_id(),
            spec_sha256=spec_digest(self._spec),
        )
        if why is not None:
            raise ApplicationError(why, type="ApprovalRefused", non_retryable=True)

    def decide(self, decision: Approve | Reject) -> GateView:
        """Record an accepted decision; the waiting gate wakes on it."""
        approved = isinstance(decision, Approve)
        self.view.decision = ApprovalDecision(
            decision="approved" if approved else "rejected",
            by=decision.by.strip(),
            note=decision.note if isinstance(decision, Approve) else decision.reason,
            at=workflow.now(),
            signed=decision.signed,
        )
        return self.view

    async def approval(self) -> ActReport | None:
        """Wait for a person when the act cannot be undone: None once approved, else the
        report to settle with (held: rejected, or nobody decided by the deadline)."""
        if self.kind is None:
            return None
        timeout = self._spec.approval_timeout
        now = workflow.now()
        self._run.step = Step.APPROVAL
        self.view.waiting, self.view.since, self.view.deadline = True, now, now + timeout
        workflow.upsert_search_attributes([_RUNG.value_set("held")])
        workflow.upsert_memo({GATE_MEMO: self.view.model_dump(mode="json")})
        try:
            await workflow.wait_condition(lambda: self.view.decision is not None, timeout=timeout)
        except TimeoutError:
            pass
        finally:
            self.view.waiting = False
        decision = self.view.decision
        if decision is None:
            self.view.decision = ApprovalDecision(decision="timed-out", at=workflow.now())
            return held_report(self.kind, timeout)
        if decision.decision == "rejected":
            return rejected_report(decision.by or "", decision.note or "")
        self._run.approved_by = decision.by
        # Approved is not delivered: the task goes on, back on the ladder's first rung.
        workflow.upsert_search_attributes([_RUNG.value_set("planned")])
        return None

    # --- consent before contact ----------------------------------------------------------------

    async def consent_check(self, routing: Routing) -> ActReport | None:
        """GOV-6: read consent and do-not-contact under the verifier's identity before an act
        that contacts a person: None when allowed, else the blocked report (nothing is sent)."""
        contacts = self._spec.contacts
        if contacts is None:
            return None
        self._run.step = Step.CONSENT
        one_try = timedelta(seconds=contacts.timeout_s + 5)
        try:
            out = await workflow.execute_activity_method(
                Consent.consent,
                ConsentInput(task_id=self._spec.task_id, contacts=contacts),
                task_queue=routing.verifier_task_queue,
                start_to_close_timeout=one_try,
                schedule_to_close_timeout=one_try * 2 + timedelta(seconds=1),
                retry_policy=_CONSENT_RETRY,
            )
        except (ActivityError, asyncio.CancelledError) as err:
            if self._cancelled(err) or isinstance(err, asyncio.CancelledError):
                raise
            # A check that could not be read blocks; it never passes.
            out = ConsentOutput(allowed=False, condition=unreadable(contacts, cause(err)))
        self.consent = out
        return None if out.allowed else blocked_report(contacts, out.condition)

    def stamp(self, receipt: Receipt) -> Receipt:
        """The receipt with what the gates decided (the approval, the consent read)."""
        if self.kind is not None:
            receipt = with_gate(receipt, self.kind, self.view.decision)
        return with_consent(receipt, self.consent)
