"""A task spec checked at submit (landed.task.validate): defaults, warnings, and bad input
refused with a clear error naming the field, never a traceback; the act's report refuses an
unreal cost; every model is complete when it is imported."""

from __future__ import annotations

import datetime as dt
import enum
import json
import uuid
from datetime import timedelta
from decimal import Decimal
from typing import Any

import pytest
from helpers.task_spec import RECORD, spec
from pydantic import ValidationError

from landed.task.messages import ActReport
from landed.task.spec import DEFAULT_TIME_CAP, TaskSpec, TaskSpecError
from landed.task.validate import check_spec


def test_valid_spec_defaults() -> None:
    check = check_spec(spec())
    assert check.warnings == []
    assert check.can_reach_verified
    assert check.spec.time_cap == DEFAULT_TIME_CAP == timedelta(minutes=30)
    assert check.spec.idempotency_key == "t-1"  # defaults to the task id: stable across retries


def test_invalid_spec_names_field_and_reason() -> None:
    with pytest.raises(TaskSpecError) as err:
        check_spec(
            spec(task_id="", owner=None, proof_plan=[{**RECORD, "expect": {"type": "nope"}}])
        )
    fields = {f for f, _ in err.value.problems}
    assert "task_id" in fields
    assert "owner" in fields
    assert any(f.startswith("proof_plan.0.expect") for f in fields)
    assert "task_id:" in str(err.value)


def test_unknown_field_rejected_not_dropped() -> None:
    with pytest.raises(TaskSpecError) as err:
        check_spec(spec(proof_plans=[]))
    assert err.value.problems[0][0] == "proof_plans"


def test_time_cap_bounds() -> None:
    with pytest.raises(TaskSpecError) as err:
        check_spec(spec(time_cap=0.1))
    assert "time_cap" in str(err.value)
    assert check_spec(spec(time_cap="PT5M")).spec.time_cap == timedelta(minutes=5)


@pytest.mark.parametrize("owner", ["agent\x00x", "agent\x1b[2J", "a\nb", "agent\x85"])
def test_an_owner_with_a_control_character_is_refused_at_submit(owner: str) -> None:
    with pytest.raises(TaskSpecError) as err:
        check_spec(spec(owner=owner))
    assert err.value.problems[0][0] == "owner"
    assert "control character" in str(err.value)
    assert check_spec(spec(owner="team-bot [eu] ü")).spec.owner == "team-bot [eu] ü"


def test_not_json_is_a_clear_error() -> None:
    with pytest.raises(TaskSpecError) as err:
        check_spec("{not json")
    assert "not JSON" in str(err.value)


def test_specs_temporal_or_json_readers_would_take_differently_are_refused() -> None:
    text = json.dumps(spec())
    twice = text.replace('"task_id": "t-1"', '"task_id": "t-1", "task_id": "t-2"')
    with pytest.raises(TaskSpecError, match="'task_id' appears twice"):
        check_spec(twice)
    lone = json.dumps(spec(act={"name": "sql.execute", "input": {"x": "\ud800"}}))
    with pytest.raises(TaskSpecError, match="lone surrogate") as caught:
        check_spec(lone)
    assert [field for field, _ in caught.value.problems] == ["act.input.x"]
    with pytest.raises(TaskSpecError, match="over the 262144 a task may hold"):
        check_spec(spec(outcome="x" * 2_100_000))
    # A TaskSpec changed after construction is checked again, not passed on as valid.
    built = check_spec(spec()).spec
    built.owner = ""
    with pytest.raises(TaskSpecError) as err:
        check_spec(built)
    assert err.value.problems[0][0] == "owner"


def test_no_probe_accepted_but_flagged() -> None:
    check = check_spec(spec(proof_plan=[]))
    assert not check.can_reach_verified
    assert any("can never reach verified" in w for w in check.warnings)


def test_only_command_probe_is_flagged() -> None:
    cmd = {
        "action": "x",
        "probe": {"kind": "command", "argv": ["true"]},
        "expect": {"type": "non_empty"},
    }
    check = check_spec(spec(proof_plan=[cmd]))
    assert not check.can_reach_verified
    assert any("no read-back probe" in w for w in check.warnings)
    assert any("weak default" in w for w in check.warnings)


def test_spec_round_trips_json() -> None:
    s = TaskSpec.model_validate(spec())
    again = TaskSpec.model_validate_json(s.model_dump_json())
    assert again == s


class _Colour(enum.StrEnum):
    RED = "red"


@pytest.mark.parametrize("form", ["mapping", "model"])
def test_values_json_would_change_are_refused_naming_the_field(form: str) -> None:
    """What the act and the verifier receive is the task as submitted: a value that would
    arrive as something else after its trip through JSON is refused, at its field."""

    def plan(params: object = (), value: object = 3) -> list[dict[str, object]]:
        probe = {**RECORD["probe"], "params": params}  # type: ignore[dict-item]
        return [{**RECORD, "probe": probe, "expect": {"type": "equals", "value": value}}]

    def given(**over: object) -> object:
        data = spec(**over)
        return data if form == "mapping" else TaskSpec.model_validate(data)

    def act(value: object) -> dict[str, object]:
        return {"name": "sql.execute", "input": {"v": value}}

    cases = [
        (given(act=act(Decimal("1.10"))), "act.input.v", 'a value of type Decimal'),
        (given(act=act(dt.datetime(2026, 1, 1))), "act.input.v", "type datetime"),
        (given(act=act({1, 2})), "act.input.v", "would arrive as the list [1,2]"),
        (given(act=act(b"abc")), "act.input.v", "type bytes"),
        (given(act=act(uuid.UUID(int=7))), "act.input.v", "type UUID"),
        (given(act=act({"a": {2: "x"}})), "act.input.v.a.2", "the key 2 is of type int"),
        (given(act=act([1, object()])), "act.input.v.1", "cannot be written as JSON"),
        (given(proof_plan=plan(params=[Decimal("2")])), "proof_plan.0.probe.params.0", "Decimal"),
        (given(proof_plan=plan(value=Decimal("3"))), "proof_plan.0.expect.value", "Decimal"),
    ]  # fmt: skip
    for data, field, says in cases:
        with pytest.raises(TaskSpecError) as caught:
            check_spec(data)  # type: ignore[arg-type]
        assert [f for f, _ in caught.value.problems] == [field], caught.value.problems
        assert says in caught.value.problems[0][1], caught.value.problems
    # JSON data passes unchanged; a tuple is a JSON list, an enum member its plain value.
    same = {"n": [1, 2.5, "x", None, True, {"k": False}], "t": (1, 2), "c": _Colour.RED}
    checked = check_spec(given(act=act(same))).spec  # type: ignore[arg-type]
    assert checked.act.input["v"] == {
        "n": [1, 2.5, "x", None, True, {"k": False}],
        "t": [1, 2],
        "c": "red",
    }
    assert type(checked.act.input["v"]["c"]) is str


def test_a_spec_built_in_code_nested_too_deeply_is_an_invalid_spec() -> None:
    """A mapping handed to check_spec (not JSON text) nested past what JSON can write: a clear
    error, never a RecursionError."""
    for depth, wrap in ((50_000, lambda v: {"a": v}), (300, lambda v: [v])):
        value: object = 1
        for _ in range(depth):
            value = wrap(value)
        with pytest.raises(TaskSpecError) as caught:
            check_spec(spec(act={"name": "sql.execute", "input": {"v": value}}))
        assert caught.value.problems == [
            ("(document)", "nested too deeply to write as JSON; a task spec is a flat object")
        ]


def test_time_cap_error_names_the_field() -> None:
    for bad in (0.1, 86400 * 8):
        with pytest.raises(TaskSpecError) as err:
            check_spec(spec(time_cap=bad))
        assert [field for field, _ in err.value.problems] == ["time_cap"]
        assert "between 1 second and 7 days" in err.value.problems[0][1]


@pytest.mark.parametrize(
    ("data", "needle"),
    [
        (b"\x80\x81garbage\xff\x00", "not UTF-8 JSON text"),
        (b"\xff\xfe\x00\x81garbage\x80", "not JSON"),  # reads as UTF-16: not JSON either
        (b"[" * 100_000 + b"]" * 100_000, "nested too deeply"),
        (b'{"a":' * 50_000 + b"1" + b"}" * 50_000, "nested too deeply"),
    ],
)
def test_binary_or_deeply_nested_input_is_an_invalid_spec(data: bytes, needle: str) -> None:
    with pytest.raises(TaskSpecError) as err:
        check_spec(data)
    assert err.value.problems[0][0] == "(document)" and needle in err.value.problems[0][1]


@pytest.mark.parametrize(
    ("over", "field"),
    [
        ({"timeouts": {"settle": 0}}, "timeouts.settle"),
        ({"timeouts": {"verify": -1}}, "timeouts.verify"),
        ({"timeouts": {"act_heartbeat": 0.5}}, "timeouts.act_heartbeat"),
        ({"timeouts": {"verify_heartbeat": 1e12}}, "timeouts.verify_heartbeat"),
        ({"retry": {"verify_backoff": -1}}, "retry.verify_backoff"),
        ({"retry": {"verify_backoff": 1e9}}, "retry.verify_backoff"),
    ],
)
def test_a_step_timeout_or_backoff_the_workflow_cannot_schedule_is_refused_at_submit(
    over: dict[str, object], field: str
) -> None:
    """Zero or negative, Temporal refuses the step only once the workflow schedules it (after
    the act may have run), and the task would never settle."""
    with pytest.raises(TaskSpecError) as err:
        check_spec(spec(**over))
    assert field in {f for f, _ in err.value.problems}, err.value.problems


def test_a_read_longer_than_the_time_cap_is_warned_about() -> None:
    check = check_spec(spec(time_cap=5, timeouts={"verify": 60}))
    assert any("timeouts.verify" in w and "time_cap" in w for w in check.warnings)
    assert check_spec(spec(retry={"verify_backoff": 0})).warnings == []


def test_a_task_too_large_for_its_receipt_is_refused_at_submit() -> None:
    # The receipt repeats the outcome and the target beside the evidence and must fit in one
    # Temporal payload: a 1 MB target passed submit, acted, and then could never settle.
    spec = {
        "task_id": "big-target",
        "owner": "a",
        "outcome": "o",
        "target": "orders-db: orders " + "x" * 1_050_000,
        "act": {"name": "x"},
    }
    with pytest.raises(TaskSpecError, match="a task may hold"):
        check_spec(spec)


@pytest.mark.parametrize("number", ["NaN", "Infinity", "-Infinity", "1e400"])
def test_a_number_json_cannot_carry_is_refused_at_submit(number: str) -> None:
    # The data converter sends each as null: the act would run another task than submitted.
    text = (
        '{"task_id": "t", "owner": "a", "outcome": "o", "target": "t", '
        f'"act": {{"name": "x", "input": {{"v": {number}}}}}}}'
    )
    with pytest.raises(TaskSpecError, match="NaN, Infinity or a number too large"):
        check_spec(text)
    with pytest.raises(TaskSpecError, match="NaN, Infinity"):
        check_spec(json.loads(text))


@pytest.mark.parametrize(
    "cost",
    [{"usd": -0.01}, {"input_tokens": -5}, {"output_tokens": -1}, {"usd": float("nan")}],
)
def test_an_act_report_of_a_negative_or_unreal_cost_is_refused(cost: dict[str, Any]) -> None:
    with pytest.raises(ValidationError, match="report what the act spent"):
        ActReport(claimed_status="done", cost=cost)  # type: ignore[arg-type]
    assert ActReport(claimed_status="done", cost={"usd": 0, "input_tokens": 10**30}).cost.usd == 0  # type: ignore[arg-type]


def test_every_model_is_complete_at_import() -> None:
    """A model whose field types are not all defined when it is created has no validator until
    something rebuilds it, and a TypeAdapter of it builds one again each time: the runner's
    converter makes a TypeAdapter per workflow run, so that cost (about a millisecond) would be
    paid by every task. Define a model's field types before it."""
    import importlib
    import inspect
    import pkgutil

    from pydantic import BaseModel

    import landed

    incomplete, checked = [], 0
    for info in pkgutil.walk_packages(landed.__path__, prefix="landed."):
        if info.name.endswith("__main__"):
            continue  # ``python -m landed`` would run the CLI
        module = importlib.import_module(info.name)
        for name, obj in vars(module).items():
            if (
                inspect.isclass(obj)
                and issubclass(obj, BaseModel)
                and obj.__module__ == module.__name__
            ):
                checked += 1
                if not obj.__pydantic_complete__:
                    incomplete.append(f"{module.__name__}.{name}")
    assert checked > 50, f"only {checked} models found: the walk missed landed's modules"
    assert incomplete == []
