"""The verdict's rules beyond one receipt's grade (landed.receipts.verdict)."""

from __future__ import annotations

import pytest

from landed.receipts.ladder import Status
from landed.receipts.verdict import (
    CANCEL_FINDING,
    PlanStep,
    TaskVerdict,
    hold_to_plan,
    hold_to_run,
    unknown_write_finding,
)

VERIFIED = TaskVerdict(Status.VERIFIED, True, ("DOD-2: graded",))


def test_a_plan_whose_every_step_passed_keeps_its_verdict() -> None:
    steps = [PlanStep("insert rows", "pass"), PlanStep("log it", "pass")]
    assert hold_to_plan(VERIFIED, True, steps) == VERIFIED
    assert hold_to_plan(VERIFIED, True, []) == VERIFIED


def test_one_step_that_did_not_pass_caps_a_done_verdict_at_executed() -> None:
    steps = [PlanStep("insert rows", "pass"), PlanStep("log it", "mismatch")]
    held = hold_to_plan(VERIFIED, True, steps)
    assert held.status is Status.EXECUTED and held.meets_bar is False
    assert held.findings == (
        "DOD-2: graded",
        "DOD-5: plan step #2 ('log it') read back mismatch, so the task is not verified "
        "whatever the other steps show",
    )
    # No done claim: nothing was claimed above the proof, so the bar still holds.
    assert hold_to_plan(VERIFIED, False, steps).meets_bar is True
    # A reading never made names itself as such.
    assert "read back None" in hold_to_plan(VERIFIED, True, [PlanStep("x", None)]).findings[-1]


@pytest.mark.parametrize("status", [Status.EXECUTED, Status.BUILT, Status.PLANNED, Status.HELD])
def test_a_verdict_at_or_below_executed_keeps_its_rung_and_gains_the_finding(
    status: Status,
) -> None:
    held = hold_to_plan(TaskVerdict(status, True, ()), True, [PlanStep("x", "empty")])
    assert held.status is status and held.meets_bar is True
    assert held.findings == (
        "DOD-5: plan step #1 ('x') read back empty, so the task is not verified whatever the "
        "other steps show",
    )


def test_reconciled_is_capped_too() -> None:
    reconciled = TaskVerdict(Status.RECONCILED, True, ())
    assert hold_to_plan(reconciled, True, [PlanStep("x", "fail")]).status is Status.EXECUTED


def test_a_lost_run_caps_the_verdict_at_planned() -> None:
    held = hold_to_run(VERIFIED, lost_run=True, unknown_write=None, cancelled=False)
    assert held == TaskVerdict(Status.PLANNED, True, VERIFIED.findings)
    # A side state has no rank: it is what the task is, whatever another run did.
    failed = TaskVerdict(Status.FAILED, False, ())
    assert hold_to_run(failed, lost_run=True, unknown_write=None, cancelled=False) == failed


def test_an_unknown_write_and_a_cancel_are_said_in_that_order() -> None:
    held = hold_to_run(VERIFIED, lost_run=False, unknown_write="it may have run", cancelled=True)
    assert held.status is Status.VERIFIED
    assert held.findings == ("DOD-2: graded", "DOD-10: it may have run", CANCEL_FINDING)
    assert unknown_write_finding("why") == "DOD-10: why"
    assert hold_to_run(VERIFIED, lost_run=False, unknown_write=None, cancelled=False) == VERIFIED
