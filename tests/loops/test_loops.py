"""Loop declarations and the tripwire's rules, as pure functions (GOV-9)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from pydantic import ValidationError

from landed.loops.spec import (
    LoopSpec,
    RepairSpec,
    TripwireRules,
    loop_task,
    repair_task,
    run_task_id,
)
from landed.loops.tripwire import (
    Note,
    TripwireState,
    accept,
    after_repair,
    person_repair,
    rule_tripped,
    silence_deadline,
    trip,
    unseen,
)

T0 = datetime(2026, 12, 1, tzinfo=UTC)
PLAN = [
    {
        "action": "rows",
        "probe": {"kind": "record", "source": "db", "query": "select 1"},
        "expect": {"type": "count", "value": 1},
    }
]
TEMPLATE: dict[str, Any] = {
    "owner": "agent-a",
    "outcome": "the report is published",
    "act": {"name": "command", "input": {"argv": ["true"]}},
    "proof_plan": PLAN,
}


def loop(**extra: Any) -> LoopSpec:
    return LoopSpec.model_validate({"name": "nightly", "every": "PT15M", "task": TEMPLATE} | extra)


def note(i: int, verdict: str, at: datetime = T0) -> Note:
    return Note(task_id=f"nightly@{i}", verdict=verdict, settled_at=at)


def test_a_cadence_of_zero_or_of_years_names_the_fix() -> None:
    for every in ("PT0S", "P3650D"):
        with pytest.raises(ValidationError, match="outside 1 minute to 31 days; give one such"):
            loop(every=every)


def test_a_repair_whose_own_plan_is_empty_is_refused() -> None:
    with pytest.raises(ValidationError, match=r"give repair\.proof_plan at least one read-back"):
        loop(repair={"outcome": "fixed", "proof_plan": []})


def test_a_template_with_its_own_task_id_or_an_invalid_task_is_refused() -> None:
    with pytest.raises(ValidationError, match="remove it"):
        loop(task=TEMPLATE | {"task_id": "x"})
    with pytest.raises(ValidationError, match="owner"):
        loop(task={k: v for k, v in TEMPLATE.items() if k != "owner"})


def test_runs_and_repairs_carry_the_loop_and_a_derived_id() -> None:
    spec = loop()
    at = datetime(2026, 12, 1, 10, 15, tzinfo=UTC)
    assert run_task_id("nightly", at) == "nightly@20261201T101500Z"
    assert loop_task(spec, run_task_id("nightly", at)).loop == "nightly"
    repair = RepairSpec.model_validate({"outcome": "fixed", "proof_plan": PLAN})
    held = repair_task("nightly", repair, "repair-nightly-1-1", None)
    assert (held.act.name, held.loop) == ("landed.person", "nightly")
    assert spec.silence == timedelta(minutes=30)  # cadence x 2 by default


def test_three_not_done_in_a_row_trips_and_a_verified_one_breaks_the_run() -> None:
    rules = TripwireRules()
    state = TripwireState(loop="nightly", armed_at=T0)
    for i, verdict in enumerate(["held", "failed", "verified", "held", "held"]):
        assert accept(state, note(i, verdict), rules.window)
        assert rule_tripped(state, rules) is None
    assert accept(state, note(9, "blocked"), rules.window)
    hit = rule_tripped(state, rules)
    assert hit == ("3 not-done in a row", ["nightly@3#1", "nightly@4#1", "nightly@9#1"])


def test_a_repeated_signal_counts_once() -> None:
    state = TripwireState(loop="nightly")
    assert accept(state, note(1, "held"), 10)
    assert not accept(state, note(1, "held"), 10)
    assert len(state.recent) == 1


def test_proof_rate_below_the_floor_over_the_last_k_trips() -> None:
    rules = TripwireRules(not_done_in_a_row=100, proof_floor=0.5, window=4)
    state = TripwireState(loop="nightly")
    for i, verdict in enumerate(["verified", "held", "verified", "held"]):
        accept(state, note(i, verdict), rules.window)
    assert rule_tripped(state, rules) is None  # 0.5 is not below 0.5
    accept(state, note(5, "held"), rules.window)
    hit = rule_tripped(state, rules)
    assert hit is not None and hit[0].startswith("proof rate 0.25 below 0.50 over the last 4")


def test_silence_counts_from_the_last_verified_settlement_not_the_last_green_one() -> None:
    state = TripwireState(loop="nightly", armed_at=T0)
    accept(state, note(1, "verified", T0 + timedelta(minutes=10)), 10)
    accept(state, note(2, "held", T0 + timedelta(minutes=25)), 10)
    assert silence_deadline(state, timedelta(minutes=30)) == T0 + timedelta(minutes=40)
    trip(state, "silence", [], T0, repair=True)
    assert silence_deadline(state, timedelta(minutes=30)) is None  # no second trip while open


def test_a_ledger_reread_brings_only_loop_runs_no_signal_brought() -> None:
    state = TripwireState(loop="nightly", armed_at=T0)
    accept(state, note(1, "verified"), 10)
    read = [note(1, "verified"), note(2, "verified"), Note(task_id="repair-nightly-1-1")]
    # The run already signalled and the repair (counted only by its own signal) are left out.
    assert unseen(state, read) == [note(2, "verified")]
    accept(state, note(2, "verified"), 10)
    assert unseen(state, read) == []  # read again: nothing new, so silence may trip


def test_a_repair_is_retried_with_backoff_up_to_its_cap_then_held_and_verified_rearms() -> None:
    repair = RepairSpec.model_validate(
        {"outcome": "fixed", "proof_plan": PLAN, "attempts": 2, "backoff": "PT1M"}
    )
    state = TripwireState(loop="nightly")
    trip(state, "3 not-done in a row", ["a#1"], T0, repair=True)
    assert (state.phase, state.repair_task_id) == ("repairing", "repair-nightly-1-1")
    assert after_repair(state, Note(task_id="repair-nightly-1-1", verdict="held"), repair, T0)
    assert (state.repair_task_id, state.retry_at) == (
        "repair-nightly-1-2",
        T0 + timedelta(minutes=1),
    )
    assert after_repair(state, Note(task_id="repair-nightly-1-2"), repair, T0) == "held"
    assert person_repair(state) == "repair-nightly-1-3"
    done = Note(task_id="repair-nightly-1-3", verdict="verified")
    assert after_repair(state, done, repair, T0) == "healthy"
    assert state.repairs_verified == 1 and state.recent == []
    assert person_repair(state) is None  # not held: nothing for a person to read back


def test_trips_number_on_past_the_kept_twenty_and_each_rule_has_a_bounded_label() -> None:
    """Only the newest 20 trips are kept: the 21st and later still get new numbers, so their
    event keys and repair task ids are never an earlier trip's."""
    from landed.loops.tripwire import rule_kind, trip_key

    state = TripwireState(loop="nightly")
    for _ in range(25):
        record = trip(state, "3 not-done in a row", [], T0, repair=True)
        state.phase = "healthy"
    assert len(state.trips) == 20 and record.number == 25
    assert record.repair_task_id == "repair-nightly-25-1" and trip_key("nightly", 25) == (
        "trip:nightly:25"
    )
    assert [rule_kind(r) for r in ("3 not-done in a row", "no verified settlement in 0:30:00")] == [
        "not_done_in_a_row",
        "silence",
    ]
    assert rule_kind("proof rate 0.40 below 0.80 over the last 10") == "proof_floor"
