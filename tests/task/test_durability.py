"""Durability's plain decisions (landed.task.durability): no Temporal needed."""

from __future__ import annotations

from datetime import timedelta

import pytest
from pydantic import ValidationError
from test_readings import AT, observed, reading, spec

from landed.probes.contract import Outcome
from landed.receipts.ladder import Status
from landed.receipts.model import LandedExtension, Receipt
from landed.receipts.verdict import TaskVerdict, hold_to_confirmation
from landed.task.durability import (
    RecheckInput,
    all_pass,
    changed,
    confirm_wait,
    landing_wait,
    lifecycle_receipt,
    not_landed_yet,
    recheck_holds,
    recheck_of,
    recheck_workflow_id,
    unconfirmed_findings,
)
from landed.task.messages import Routing
from landed.task.spec import TaskSpec

S = timedelta(seconds=1)


def windowed(window: float | None = None, confirm: float | None = None) -> TaskSpec:
    body = spec().model_dump(mode="json")
    body["proof_plan"][0] |= {"settle_window": window, "confirm_after": confirm}
    return TaskSpec.model_validate(body)


def test_a_reading_that_changes_between_the_two_reads_is_unconfirmed() -> None:
    task = spec()
    first = reading(task, observed(task))
    assert changed(first.observation, observed(task)) is None
    assert changed(first.observation, observed(task, Outcome.EMPTY, 0)) == (
        "read pass (2), then empty (0)"
    )
    # Both pass, with another value (at_least, a status): still not the same outcome.
    assert changed(first.observation, observed(task, Outcome.PASS, 3)) is not None
    assert changed(first.observation, observed(task, Outcome.PASS, 2.0)) is not None
    second = {0: reading(task, observed(task, Outcome.EMPTY, 0))}
    (finding,) = unconfirmed_findings(task, {0: first}, second, S)
    assert finding.startswith("unconfirmed: plan step #1 ('insert 2 rows') read pass (2)")
    assert unconfirmed_findings(task, {0: first}, {0: first}, S) == ()


def test_an_unconfirmed_pass_is_not_done() -> None:
    done = TaskVerdict(Status.VERIFIED, True, ())
    held = hold_to_confirmation(done, ("unconfirmed: x",))
    assert (held.status, held.meets_bar, held.findings) == (
        Status.EXECUTED,
        False,
        ("unconfirmed: x",),
    )
    assert hold_to_confirmation(done, ()) == done


def test_the_quiet_interval_is_the_step_s_else_the_task_s() -> None:
    assert confirm_wait(spec(), [0]) == S  # the documented default
    assert confirm_wait(windowed(confirm=0.2), [0]) == S / 5
    assert all_pass({0: reading(spec(), observed(spec()))}, 1)
    assert not all_pass({0: reading(spec(), observed(spec(), Outcome.EMPTY, 0))}, 1)
    assert not all_pass({}, 0)  # no plan: nothing to confirm


def test_late_steps_are_read_again_only_while_their_window_is_open() -> None:
    task = windowed(window=5)
    empty = {0: reading(task, observed(task, Outcome.EMPTY, 0))}
    assert not_landed_yet(task, empty, 2 * S) == [0]
    assert not_landed_yet(task, empty, 5 * S) == []
    assert not_landed_yet(spec(), empty, timedelta(0)) == []  # no window: settles at once
    duplicated = {0: reading(task, observed(task, Outcome.DUPLICATED, 3))}
    assert not_landed_yet(task, duplicated, timedelta(0)) == []  # final at once
    # The backoff, cut so the last read falls as the window closes.
    assert landing_wait(task, [0], 2 * S, S) == S
    assert landing_wait(task, [0], 4.5 * S, S) == S / 2


def test_durations_are_bounded_with_the_field_named() -> None:
    with pytest.raises(ValidationError, match="settle_window must be between 0 and 1 hour"):
        windowed(window=7200)
    body = spec().model_dump(mode="json") | {"durability": {"recheck_after": 0}}
    with pytest.raises(ValidationError, match=r"durability\.recheck_after must be between"):
        TaskSpec.model_validate(body)


def test_a_recheck_reads_confirmed_reversed_or_nothing() -> None:
    task = spec()
    assert recheck_holds({0: reading(task, observed(task))}, 1) == "confirmed"
    assert recheck_holds({0: reading(task, observed(task, Outcome.EMPTY, 0))}, 1) == "reversed"
    unseen = reading(task, observed(task, Outcome.PROBE_ERROR, None))
    assert recheck_holds({0: unseen}, 1) == "unobserved"
    assert recheck_workflow_id("t-1") == "t-1#recheck" and recheck_of("t-1#recheck", "t-1")
    assert not recheck_of("t-1", "t-1")


def test_a_reversal_row_keeps_the_settled_receipt_and_says_what_no_longer_holds() -> None:
    body = spec().model_dump(mode="json") | {"durability": {"recheck_after": 60}, "loop": "L"}
    task = TaskSpec.model_validate(body)
    first = reading(task, observed(task))
    settled = Receipt(
        task_id=task.task_id,
        claimed_status="done",
        verdict="verified",
        verdict_by="runner",
        settled_at=AT,
        proof=[first.proof],
        landed=LandedExtension.model_validate({"lifecycle": "verified", "loop": "L"}),
    )
    inp = RecheckInput(
        spec=task,
        routing=Routing(actor_task_queue="a", verifier_task_queue="v", runner="runner-2"),
        before=[None],
        attempt=1,
        settled=settled,
    )
    gone = reading(task, observed(task, Outcome.EMPTY, 0))
    row = lifecycle_receipt(inp, [gone.proof], "reversed", at=AT + 60 * S)
    assert (row.verdict, row.verdict_by, row.settled_at) == ("reversed", "runner-2", AT + 60 * S)
    assert row.landed is not None and row.landed.loop == "L"
    ext = row.landed.model_dump()
    assert ext["lifecycle"] == "reversed" and ext["meets_bar"] is False
    assert [p.result for p in row.proof] == ["empty"]
    assert any(f.startswith("reversed: plan step #1") for f in ext["findings"])
    kept = lifecycle_receipt(inp, [first.proof], "confirmed", at=AT + 60 * S)
    assert kept.verdict == "verified" and kept.landed is not None
    assert kept.landed.model_dump()["lifecycle"] == "confirmed"
    assert settled.landed is not None and settled.landed.model_dump()["lifecycle"] == "verified"
