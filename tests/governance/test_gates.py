"""The governance gates' pure decisions: who may approve, what a hold and a refusal settle as,
the consent check's verdict, and which time cap a task runs under (no Temporal)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from temporalio.contrib.pydantic import pydantic_data_converter

import landed
from landed.governance.consent import blocked_report, judge_consent, with_consent
from landed.governance.gates import (
    ApprovalDecision,
    gate_kind,
    held_report,
    refusal,
    rejected_report,
    with_gate,
)
from landed.governance.time_cap import effective_time_cap, past_time_cap, time_capped
from landed.receipts.grading import evaluate
from landed.receipts.scorecard import ScoreTally
from landed.signing import TrustStore
from landed.task.decisions import RunFacts, graded_receipt
from landed.task.gate_messages import ConsentOutput
from landed.task.gate_spec import Contacts
from landed.task.messages import ActReport, spec_digest
from landed.task.spec import TaskSpec

NOW = datetime(2026, 12, 2, 12, 0, tzinfo=UTC)


def spec(**extra: Any) -> TaskSpec:
    fields = {"task_id": "t1", "owner": "agent-a", "outcome": "sent", "act": {"name": "x"}}
    return TaskSpec.model_validate({**fields, **extra})


def _graded(task: TaskSpec, report: ActReport) -> landed.Receipt:
    facts = RunFacts(attempt=0, pre_read=True, spec_sha256="v1:x", run_id="r", runner="runner-1")
    return graded_receipt(task, report, [], facts, settled_at=NOW, trusted=TrustStore([]))


def test_what_opens_the_gate() -> None:
    assert gate_kind(spec(irreversible="spend")) == "spend"
    assert gate_kind(spec(approval={"required": True})) == "approval"
    assert gate_kind(spec()) is None
    # A submitted approval is data from the agent: it neither opens nor closes the gate.
    assert gate_kind(spec(approval={"approved_by": "boss"})) is None
    with pytest.raises(ValueError, match="irreversible"):
        spec(irreversible="delete")


@pytest.mark.parametrize(
    ("by", "kwargs", "why"),
    [
        ("agent-a", {}, "owns task 't1'"),
        (" AGENT-A ", {}, "owns task 't1'"),
        ("actor@box", {"actors": ["actor@box"]}, "identity that acts"),
        # Before the first act nothing was seen acting: the actor@ form and the actor role's
        # configured identity are refused all the same.
        ("actor@runner-host:4242", {}, "identity that acts"),
        ("Robo-Actor", {"actors": ["robo-actor"]}, "identity that acts"),
        ("dana", {"named": "payments", "groups": {"payments": ["erin"]}}, "names 'payments'"),
        ("dana", {"waiting": False}, "not waiting for approval"),
        ("  ", {}, "approver's name is empty"),
        ("dana", {"named": "erin"}, "names 'erin' as its approver, not 'dana'"),
        ("dana", {"decided": "approved"}, "already approved by erin"),
        ("dana", {"decided": "rejected", "waiting": False}, "already rejected by erin"),
    ],
)
def test_a_decision_is_refused(by: str, kwargs: dict[str, Any], why: str) -> None:
    task = spec(irreversible="send", approval={"approver": kwargs.get("named")})
    decided = kwargs.get("decided")
    decision = ApprovalDecision(decision=decided, by="erin", at=NOW) if decided else None
    got = refusal(
        task,
        by,
        waiting=kwargs.get("waiting", True),
        decided=decision,
        actors=kwargs.get("actors", []),
        groups=kwargs.get("groups"),
    )
    assert got is not None and why in got, got


def test_a_person_other_than_owner_and_actor_may_decide() -> None:
    task = spec(irreversible="send")
    assert refusal(task, "dana", waiting=True, decided=None, actors=["actor@box"]) is None
    grouped = spec(irreversible="send", approval={"approver": "Payments"})
    groups = {"payments": ["erin", "dana"]}
    assert refusal(grouped, "DANA", waiting=True, decided=None, actors=[], groups=groups) is None


def test_held_and_rejected_settle_held_counted_in_the_hold_rate_with_zero_deliveries() -> None:
    task = spec(irreversible="send", approval={"approved_by": "agent-a"})
    other = spec(task_id="t2", irreversible="send", approval={"approved_by": "agent-a"})
    timed_out = ApprovalDecision(decision="timed-out", at=NOW)
    held = with_gate(_graded(task, held_report("send", timedelta(hours=24))), "send", timed_out)
    rejected = ApprovalDecision(decision="rejected", by="gail", note="no", at=NOW)
    # Two tasks: the tally counts each task once, by its latest receipt.
    refused = with_gate(_graded(other, rejected_report("gail", "no")), "send", rejected)
    tally = ScoreTally()
    for receipt in (held, refused):
        assert receipt.verdict == "held"
        # Only the gate's decision is written as the approval, never the submitted one.
        assert receipt.approval is not None and receipt.approval.approved_by is None
        tally.add(receipt, evaluate(receipt))
    card = tally.scorecard()
    assert card.held == 2 and card.hold_rate == 1.0 and card.done_proven == 0


def test_an_approval_is_written_on_the_receipt_with_its_note() -> None:
    task = spec(irreversible="send")
    decision = ApprovalDecision(decision="approved", by="dana", note="ok", at=NOW)
    receipt = with_gate(_graded(task, ActReport(claimed_status="done")), "send", decision)
    assert receipt.approval is not None
    assert (receipt.approval.approved_by, receipt.approval.approved_at) == ("dana", NOW)
    assert receipt.landed is not None
    record = receipt.landed.model_dump()["approval"]
    assert record["decision"] == "approved" and record["note"] == "ok" and record["kind"] == "send"
    # Approval is not delivery: with no read-back the receipt is not verified.
    assert receipt.verdict != "verified"


CONTACTS = Contacts(kind="message", recipient="a@b.test", consent_source="consent-db")


@pytest.mark.parametrize(
    ("rows", "why"),
    [
        ([{"do_not_contact": 1, "consent": 1}], "on the do-not-contact list"),
        ([{"do_not_contact": 0, "consent": 0}], "no consent from a@b.test for message"),
        ([], "could not be read"),
        ([{"do_not_contact": None, "consent": 1}], "could not be read"),
        ("<array of 1>", "could not be read"),
    ],
)
def test_consent_refuses_unless_it_reads_consent_and_no_do_not_contact(rows: Any, why: str) -> None:
    got = judge_consent(CONTACTS, rows)
    assert got is not None and why in got


def test_consent_passes_on_a_consent_row_and_blocked_names_who_clears() -> None:
    assert judge_consent(CONTACTS, [{"do_not_contact": 0, "consent": "1"}]) is None
    report = blocked_report(CONTACTS, "why")
    assert report.claimed_status == "blocked"
    assert "the keeper of consent source 'consent-db'" in (report.report or "")
    assert _graded(spec(), report).verdict == "blocked"


def test_a_refused_contact_says_why_in_plain_words_first() -> None:
    condition = "a@b.test is on the do-not-contact list in consent source 'consent-db'"
    graded = _graded(spec(), blocked_report(CONTACTS, condition))
    assert graded.landed is not None
    before = graded.landed.model_dump()["findings"]
    refused = ConsentOutput(allowed=False, condition=condition, checked_by="verifier@h:1")
    receipt = with_consent(graded, refused)
    assert receipt.landed is not None
    findings = receipt.landed.model_dump()["findings"]
    assert findings[0].startswith(f"GOV-6: blocked before contact: {condition}. Who can clear")
    assert findings[1:] == before
    assert receipt.why == f"not done (blocked): {findings[0]}."
    assert not receipt.done
    # A pass records who read it and adds no finding.
    allowed = with_consent(graded, ConsentOutput(allowed=True, checked_by="verifier@h:1"))
    assert allowed.landed is not None
    assert allowed.landed.model_dump()["findings"] == before


def test_the_time_cap_precedence_task_then_deployment_then_default() -> None:
    named = spec(time_cap="PT5M")
    unnamed = spec()
    assert not named.deployment_time_cap and unnamed.deployment_time_cap
    ten = timedelta(minutes=10)
    assert effective_time_cap(named, ten) == timedelta(minutes=5)
    assert effective_time_cap(unnamed, ten) == ten
    assert effective_time_cap(unnamed, None) == timedelta(minutes=30)
    # The mark survives Temporal's round trip, and is not part of what the task asks.
    converter = pydantic_data_converter.payload_converter
    (back,) = converter.from_payloads(converter.to_payloads([unnamed]), [TaskSpec])
    assert back.deployment_time_cap
    assert spec_digest(unnamed) == spec_digest(spec(time_cap="PT30M"))


def test_past_the_time_cap_fails_the_task_naming_the_cap() -> None:
    later = NOW + timedelta(seconds=1)
    assert past_time_cap(later, NOW, "act timed out", "verified")
    assert past_time_cap(later, NOW, None, "planned")
    assert not past_time_cap(later, NOW, None, "verified")
    assert not past_time_cap(NOW - timedelta(seconds=1), NOW, "boom", "failed")
    receipt = time_capped(_graded(spec(), ActReport(claimed_status="done")), NOW - NOW, "x")
    assert receipt.verdict == "failed" and receipt.landed is not None
    assert receipt.landed.model_dump()["findings"][-1].startswith("GOV-4: time cap")


def test_an_act_registers_only_a_known_irreversible_kind() -> None:
    from landed.task.acts import irreversible_kind

    @landed.act("t.send", irreversible="send")
    def send(spec: dict[str, Any], ctx: landed.ActContext) -> landed.ActReport:
        raise AssertionError("not run here")

    assert irreversible_kind(send) == "send"
    with pytest.raises(ValueError, match="not one of send, publish"):
        landed.act("t.bad", irreversible="delete")
