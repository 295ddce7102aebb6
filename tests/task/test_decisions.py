"""The task's decisions as plain functions (landed.task.decisions): no Temporal needed."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from test_readings import AT, KEY, observed, reading, spec

from landed.probes.contract import Outcome
from landed.receipts.model import ProofItem, Receipt
from landed.signing import TrustStore
from landed.task.assemble import unknown_write_report
from landed.task.decisions import (
    RunFacts,
    cancelled_before_act_report,
    graded_receipt,
    judge_claim,
    ledger_tries,
    past_cap,
    read_budget,
    reconcile,
    remaining,
    signed_key_id,
    sole_key_id,
    verify_failed,
)
from landed.task.messages import ActReport, ClaimOutput

S = timedelta(seconds=1)


def tries(budget: timedelta) -> tuple[int, timedelta]:
    return ledger_tries(budget, initial=S, backoff=2.0, longest_wait=30 * S, one_try_at_most=30 * S)


@pytest.mark.parametrize("budget", [S, 3 * S, 10 * S, 60 * S, 600 * S, 3600 * S])
def test_ledger_tries_and_their_waits_end_within_the_budget(budget: timedelta) -> None:
    count, one_try = tries(budget)
    waits, wait = timedelta(0), S
    for _ in range(count - 1):
        waits += wait
        wait = min(wait * 2, 30 * S)
    assert waits <= budget / 2
    assert one_try >= timedelta(milliseconds=500)
    # The tries share the other half (to the microsecond a division rounds to), unless even the
    # shortest try (half a second) is longer.
    tolerance = timedelta(microseconds=count)
    assert count * one_try <= max(budget / 2, count * timedelta(milliseconds=500)) + tolerance


def test_ledger_tries_count_the_backoff_that_fits_in_half_the_budget() -> None:
    assert tries(S) == (1, timedelta(milliseconds=500))
    assert tries(10 * S) == (3, 10 * S / 6)  # waits 1 s + 2 s fit in 5 s, 4 s more do not
    assert tries(3600 * S) == (64, 3600 * S / 128)
    # One try is never longer than a local step may take.
    capped = ledger_tries(
        3600 * S, initial=S, backoff=2.0, longest_wait=30 * S, one_try_at_most=10 * S
    )
    assert capped == (64, 10 * S)


def test_time_left_budgets_and_the_cap() -> None:
    deadline = AT + 10 * S
    assert remaining(deadline, AT) == 10 * S
    assert remaining(deadline, AT + 9 * S) is None  # a second is too little to start a step
    assert read_budget(None, AT, 6 * S) == 6 * S
    assert read_budget(deadline, AT, 6 * S) == 16 * S
    assert read_budget(deadline, AT + 20 * S, 6 * S) == S
    assert past_cap(deadline, AT, 10 * S) and not past_cap(deadline, AT, 9 * S)
    assert not past_cap(None, AT, 3600 * S)


def test_verify_failed_says_how_to_get_a_verifier_only_when_none_answered() -> None:
    plain = verify_failed("ApplicationError: boom", no_verifier_answered=False, queue="q")
    assert plain == "verify failed: ApplicationError: boom"
    none = verify_failed("TimeoutError: x", no_verifier_answered=True, queue="landed-verify")
    assert "no verifier answered on task queue 'landed-verify'" in none
    assert "`landed worker verifier` runs" in none


def proof(key_id: object = None) -> ProofItem:
    landed = None if key_id is None else {"signature": {"key_id": key_id}}
    return ProofItem(kind="record", ref="db:q", checked_by="v", result="pass", landed=landed)


def test_the_receipts_key_id_is_the_one_key_every_signed_proof_names() -> None:
    assert signed_key_id(proof("k1")) == "k1" and signed_key_id(proof()) is None
    # A malformed signature is the grade's to refuse, never an exception here.
    odd = ProofItem(kind="record", ref="db:q", landed={"signature": "not a dict"})
    assert signed_key_id(odd) is None
    assert sole_key_id([proof("k1"), proof(), proof("k1")]) == "k1"
    assert sole_key_id([proof("k1"), proof("k2")]) is None
    assert sole_key_id([]) is None


def test_a_claim_with_nobody_else_lets_the_run_act() -> None:
    decided = judge_claim(ClaimOutput(claimed_for="run-a"))
    assert decided.may_act and decided.lost_run is None and decided.settled is None


def test_a_claim_settled_elsewhere_hands_back_the_ledgers_receipt() -> None:
    stored = Receipt(task_id="t-1", claimed_status="done")
    decided = judge_claim(ClaimOutput(settled=stored))
    assert not decided.may_act and decided.settled is stored and decided.unknown_write is None


def test_a_claim_of_another_run_that_never_settled_stops_the_act() -> None:
    at = datetime(2026, 1, 2, tzinfo=UTC)
    decided = judge_claim(ClaimOutput(other_run="run-old", other_at=at))
    assert not decided.may_act and decided.lost_run == "run-old"
    assert decided.act_error is not None and at.isoformat() in decided.act_error
    assert decided.unknown_write is not None and "a person must reconcile" in decided.unknown_write
    unknown_time = judge_claim(ClaimOutput(other_run="run-old"))
    assert unknown_time.act_error is not None and "an unknown time" in unknown_time.act_error


def test_reconcile_settles_a_write_that_landed_without_acting_again() -> None:
    task = spec()
    decided = reconcile(task, {0: reading(task, observed(task))}, [None], "boom")
    assert decided.report == unknown_write_report() and decided.unknown_write is None


def test_reconcile_never_acts_again_on_a_step_it_could_not_observe() -> None:
    task = spec()
    unseen = {0: reading(task, observed(task, Outcome.PROBE_ERROR, value=None))}
    decided = reconcile(task, unseen, [None], "boom")
    assert decided.report is not None and decided.report.claimed_status == "failed"
    assert decided.report.report == "act did not complete: boom; the outcome is unknown"
    assert decided.unknown_write is not None
    assert "could not observe plan step #1 'insert 2 rows'" in decided.unknown_write


def test_reconcile_never_acts_again_when_the_system_of_record_changed() -> None:
    task = spec()
    before = observed(task, Outcome.MISMATCH, value=0)
    changed = {0: reading(task, observed(task, Outcome.MISMATCH, value=1, before_value=0))}
    decided = reconcile(task, changed, [before], "boom")
    assert decided.report is not None
    assert decided.report.report.endswith("part of the outcome may have landed")
    assert decided.unknown_write is not None and "(mismatch)" in decided.unknown_write


def test_reconcile_lets_the_act_run_again_only_when_nothing_landed() -> None:
    task = spec()
    before = observed(task, Outcome.MISMATCH, value=0)
    same = {0: reading(task, observed(task, Outcome.MISMATCH, value=0, before_value=0))}
    assert reconcile(task, same, [before], "boom").report is None
    empty = {0: reading(task, observed(task, Outcome.EMPTY, value=None, evidence=None))}
    assert reconcile(task, empty, [None], "boom").report is None


def facts(**changes: object) -> RunFacts:
    base = RunFacts(
        attempt=1, pre_read=True, spec_sha256="s" * 64, run_id="run-a", runner="runner-1"
    )
    return base.__class__(**{**base.__dict__, **changes})  # type: ignore[arg-type]


def graded(readings: list[Outcome], report: ActReport, **changes: object) -> Receipt:
    task = spec(len(readings))
    proofs = [
        reading(
            task, observed(task, o, value=2 if o == Outcome.PASS else 1), index=i, signed="after"
        ).proof
        for i, o in enumerate(readings)
    ]
    trusted = TrustStore([KEY.public_key])
    return graded_receipt(task, report, proofs, facts(**changes), settled_at=AT, trusted=trusted)


DONE = ActReport(claimed_status="done", report="inserted 2 rows", actor="actor-1")


def test_a_task_whose_every_step_reads_back_pass_is_verified_by_the_runner() -> None:
    receipt = graded([Outcome.PASS], DONE)
    assert receipt.verdict == "verified" and receipt.verdict_by == "runner-1"
    assert receipt.landed is not None and receipt.landed.key_id == KEY.key_id
    assert receipt.landed.meets_bar and receipt.landed.findings == []
    assert receipt.settled_at == AT and receipt.landed.run_id == "run-a"


def test_one_declared_step_that_did_not_pass_keeps_the_task_from_verified() -> None:
    # The grade already holds a disagreeing read-back to an artifact (built, below executed);
    # the plan's rule adds its finding (its cap is tested in tests/receipts/test_verdict.py).
    receipt = graded([Outcome.PASS, Outcome.MISMATCH], DONE)
    assert receipt.verdict == "built" and receipt.landed is not None
    assert not receipt.landed.meets_bar
    assert any(
        f.startswith("DOD-5: plan step #2 ('insert 2 rows') read back mismatch")
        for f in receipt.landed.findings
    )


def test_a_lost_run_an_unknown_write_and_a_cancel_are_held_in_the_verdict() -> None:
    receipt = graded(
        [Outcome.PASS],
        unknown_write_report(),
        lost_run=True,
        unknown_write="run r may have acted",
        cancelled=True,
        act_error="boom",
    )
    assert receipt.verdict == "planned" and receipt.landed is not None
    assert receipt.landed.act_error == "boom"
    assert receipt.landed.findings[-2:] == [
        "DOD-10: run r may have acted",
        "the task was cancelled while it ran: no act started after the cancel, and the verdict "
        "rests on what was read back",
    ]


def test_a_task_cancelled_before_its_act_is_superseded() -> None:
    report = cancelled_before_act_report()
    assert report.claimed_status == "superseded" and "nothing was done" in report.report
    assert graded([], report).verdict == "superseded"
