"""Plan lint (landed.probes.lint): which bad writes each expectation catches, nothing run."""

from __future__ import annotations

from typing import Any

import pytest

from landed.probes.contract import Contract
from landed.probes.lint import SCENARIOS, lint_contract, lint_json, lint_plan

RECORD = {"kind": "record", "source": "db", "query": "select count(*) from t where b = 'x'"}
HTTP = {"kind": "http", "source": "site", "url": "/x"}


def contract(expect: dict[str, Any], probe: dict[str, Any] | None = None) -> Contract:
    return Contract.model_validate(
        {"action": "write it", "probe": probe or RECORD, "expect": expect}
    )


def called_done(
    expect: dict[str, Any], probe: dict[str, Any] | None = None, **kw: Any
) -> list[str]:
    step = lint_contract(contract(expect, probe), where="proof_plan.0", **kw)
    assert step.problem is None, step.problem
    assert [s.name for s in step.scenarios] == list(SCENARIOS)
    return step.called_done


@pytest.mark.parametrize(
    ("expect", "probe"),
    [
        ({"type": "count", "value": 45}, None),
        ({"type": "count", "value": 0}, None),  # a deletion: the before-state had rows
        ({"type": "equals", "value": 45}, None),
        ({"type": "equals", "value": "published"}, HTTP),
        ({"type": "regex", "value": "^order-[0-9]+$"}, HTTP),
        ({"type": "json_path", "path": "$.status", "value": "paid"}, HTTP),
        ({"type": "rung_at_least", "value": "delivered"}, HTTP),
    ],
)
def test_exact_expectations_with_a_pre_read_catch_every_bad_write(
    expect: dict[str, Any], probe: dict[str, Any] | None
) -> None:
    assert called_done(expect, probe) == []


def test_at_least_calls_a_double_write_done() -> None:
    assert called_done({"type": "at_least", "value": 45}) == ["double"]


def test_contains_calls_a_double_write_done() -> None:
    assert called_done({"type": "contains", "value": "Hello"}, HTTP) == ["double"]


def test_the_weak_default_calls_half_double_and_wrong_writes_done() -> None:
    assert called_done({"type": "non_empty"}, HTTP) == ["half", "double", "wrong value"]


def test_without_a_pre_read_a_state_that_already_held_is_called_done() -> None:
    assert called_done({"type": "count", "value": 45}, pre_read=False) == ["already there"]
    deletion = called_done({"type": "count", "value": 0}, pre_read=False)
    assert "nothing landed" in deletion and "already there" in deletion


def test_each_scenario_shows_its_readings_and_the_judges_outcome() -> None:
    step = lint_contract(contract({"type": "count", "value": 45}), where="proof_plan.0")
    shown = {s.name: (s.before, s.after, s.outcome) for s in step.scenarios}
    assert shown["nothing landed"] == ("nothing", "nothing", "empty")
    assert shown["half"] == ("nothing", "22", "mismatch")
    assert shown["double"] == ("nothing", "90", "duplicated")
    assert shown["already there"] == ("45", "45", "vacuous")
    assert shown["wrong value"] == ("nothing", "44", "mismatch")
    assert shown["probe error"][2] == "probe-error"


def test_an_expectation_no_made_up_reading_passes_is_not_judged() -> None:
    plan = lint_plan([("line 1", contract({"type": "regex", "value": "^(?=x)y$"}, HTTP))])
    assert plan.unjudged and not plan.calls_bad_write_done
    assert "no made-up reading passes" in str(plan.steps[0].problem)


def test_the_json_report_lists_caught_and_called_done_per_step() -> None:
    plan = lint_plan(
        [
            ("proof_plan.0", contract({"type": "count", "value": 45})),
            ("proof_plan.1", contract({"type": "at_least", "value": 1})),
        ]
    )
    report = lint_json(plan)
    assert report["calls_bad_write_done"] is True and report["pre_read"] is True
    assert report["steps"][0]["called_done"] == []
    assert report["steps"][1]["called_done"] == ["double"]
    assert len(report["steps"][1]["scenarios"]) == len(SCENARIOS)
