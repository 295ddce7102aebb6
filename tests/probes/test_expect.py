"""Expectations: labels, judgement of readings, before/after, and properties for every type."""

from __future__ import annotations

import json
import string
from datetime import UTC, datetime

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from landed.probes.coerce import coerce_expectation
from landed.probes.contract import (
    AtLeast,
    CommandProbe,
    Contains,
    Contract,
    Count,
    Equals,
    FileProbe,
    JsonPath,
    NonEmpty,
    Observation,
    Outcome,
    PaymentProbe,
    Regex,
    RungAtLeast,
)
from landed.probes.expect import (
    Judgement,
    is_weak,
    judge,
    judge_with_before,
    label,
    label_for,
    strict_equal,
)
from landed.probes.reading import Capture, Reading
from landed.probes.verdict import InvalidContract


def text(value: str | bytes) -> Reading:
    return Reading(capture=Capture.of(value.encode() if isinstance(value, str) else value))


def outcome(expect: object, reading: Reading, kind: str = "command") -> Outcome:
    return judge(expect, reading, probe_kind=kind).outcome


# --- labels -------------------------------------------------------------------------------------


def test_labels_name_every_expectation() -> None:
    assert label(Count(value=45)) == "count(45)"
    assert label(AtLeast(value=3)) == "at_least(3)"
    assert label(Contains(value="200")) == 'contains("200")'
    assert label(Equals(value={"a": 1})) == 'equals({"a": 1})'
    assert label(Regex(value="^ok$")) == 'regex("^ok$")'
    assert label(JsonPath(path="$.status", value="paid")) == 'json_path($.status == "paid")'
    assert label(JsonPath(path="$.id", op="exists")) == "json_path($.id exists)"
    assert label(RungAtLeast(value="delivered")) == "rung_at_least(delivered)"
    assert label(NonEmpty()) == "non_empty (weak default)"


def test_non_empty_is_weak_unless_typed_claims_stand_beside_it() -> None:
    cmd = CommandProbe(argv=["true"])
    assert is_weak(cmd, NonEmpty())
    assert not is_weak(cmd, Count(value=1))
    pay = PaymentProbe(source="psp", payment_id="p1", amount=4500, currency="usd")
    assert not is_weak(pay, NonEmpty())
    assert label_for(pay, NonEmpty()) == 'payment(amount=4500, currency="usd")'
    assert (
        label_for(FileProbe(path="x", size=3), Contains(value="a"))
        == 'file(size=3) and contains("a")'
    )


# --- count: the genchi cases ---------------------------------------------------------------------


def test_zero_string_under_count_45_is_empty_never_a_pass() -> None:
    """A "0" returned as a string where a count is expected is 0 rows: empty, not a pass."""
    assert outcome(Count(value=45), text("0")) is Outcome.EMPTY
    assert outcome(Count(value=45), text("0\n")) is Outcome.EMPTY
    assert outcome(Count(value=45), text(" 45 \n")) is Outcome.PASS


def test_count_above_the_claim_is_duplicated_and_below_is_mismatch() -> None:
    assert outcome(Count(value=45), text("90")) is Outcome.DUPLICATED
    assert outcome(Count(value=45), text("22")) is Outcome.MISMATCH


def test_empty_output_is_empty_and_never_read_as_zero() -> None:
    assert outcome(Count(value=0), text("")) is Outcome.EMPTY
    assert outcome(Count(value=45), text("  \n")) is Outcome.EMPTY
    assert outcome(AtLeast(value=1), text("")) is Outcome.EMPTY


@pytest.mark.parametrize("raw", ["45 rows", "4.5e1", "0x2d", "forty-five", "45.0", "٤٥", "true"])
def test_anything_but_a_whole_number_is_not_a_count(raw: str) -> None:
    result = judge(Count(value=45), text(raw), probe_kind="command")
    assert result.outcome is Outcome.MISMATCH
    assert "not a whole number" in result.message


def test_a_huge_output_is_not_parsed_as_a_number() -> None:
    capture = Capture(keep=16)
    capture.feed(b"4" * 64)
    result = judge(Count(value=45), Reading(capture=capture), probe_kind="command")
    assert result.outcome is Outcome.MISMATCH


def test_typed_number_beats_text_and_bool_is_not_a_number() -> None:
    reading = text("[]")
    reading.number = 0
    assert outcome(Count(value=0), reading) is Outcome.PASS
    reading.number = True
    assert outcome(Count(value=1), reading) is Outcome.MISMATCH


# --- the other expectations ---------------------------------------------------------------------


def test_at_least() -> None:
    assert outcome(AtLeast(value=3), text("3")) is Outcome.PASS
    assert outcome(AtLeast(value=2.5), text("2.75")) is Outcome.PASS
    assert outcome(AtLeast(value=3), text("2")) is Outcome.MISMATCH
    assert outcome(AtLeast(value=3), text("0")) is Outcome.EMPTY
    assert outcome(AtLeast(value=3), text("nan")) is Outcome.MISMATCH


def test_contains_regex_equals() -> None:
    assert outcome(Contains(value="200"), text("HTTP 200 OK")) is Outcome.PASS
    assert outcome(Contains(value="200"), text("HTTP 500")) is Outcome.MISMATCH
    assert outcome(Regex(value=r"^v\d+\.\d+$"), text("v1.2\n")) is Outcome.PASS
    assert outcome(Regex(value=r"^v\d+$"), text("beta")) is Outcome.MISMATCH
    assert outcome(Equals(value="done"), text("done\n")) is Outcome.PASS
    assert outcome(Equals(value=45), text("45")) is Outcome.PASS
    assert outcome(Equals(value=45), text('"45"')) is Outcome.MISMATCH
    assert outcome(Equals(value=True), text("1")) is Outcome.MISMATCH


@pytest.mark.slow
def test_regex_that_backtracks_forever_is_cut_off_not_hung() -> None:
    hostile = text("a" * 60 + "!")
    result = judge(Regex(value=r"(a|aa)+$"), hostile, probe_kind="command")
    assert result.outcome is Outcome.PROBE_ERROR
    assert "did not finish" in result.message


def test_json_path_operators() -> None:
    doc = text('{"order": {"status": "paid", "total": 45, "tags": ["a", "b"]}, "n": null}')
    ok = Outcome.PASS
    assert outcome(JsonPath(path="$.order.status", value="paid"), doc) is ok
    assert outcome(JsonPath(path="order.total", op=">=", value=45), doc) is ok
    assert outcome(JsonPath(path="$.order.total", op="<", value=45), doc) is Outcome.MISMATCH
    assert outcome(JsonPath(path="$.order.tags", op="contains", value="b"), doc) is ok
    assert outcome(JsonPath(path="$.order.tags[1]", value="b"), doc) is ok
    assert outcome(JsonPath(path="$.order.tags[-1]", value="b"), doc) is ok
    assert outcome(JsonPath(path='$["order"]["status"]', op="!=", value="open"), doc) is ok
    assert outcome(JsonPath(path="$.n", op="exists"), doc) is ok
    assert outcome(JsonPath(path="$.gone", op="exists", value=False), doc) is ok
    assert outcome(JsonPath(path="$.gone", value=None), doc) is Outcome.MISMATCH
    assert outcome(JsonPath(path="$.order.total", op=">", value="4"), doc) is Outcome.MISMATCH
    assert outcome(JsonPath(path="$.a", value=1), text("not json")) is Outcome.MISMATCH


@pytest.mark.parametrize("value", ["true", "false", 1, 0, "yes", [], {}])
def test_json_path_exists_takes_only_a_json_boolean(value: object) -> None:
    # "exists" with "true" or 1 used to read as "is absent" (it is not True): refuse it instead.
    with pytest.raises(InvalidContract) as err:
        coerce_expectation({"type": "json_path", "path": "$.id", "op": "exists", "value": value})
    assert "takes value true or false" in str(err.value)


def test_json_path_exists_with_true_false_or_nothing() -> None:
    doc = text('{"id": 7}')
    for value, expected in [(None, Outcome.PASS), (True, Outcome.PASS), (False, Outcome.MISMATCH)]:
        expect = coerce_expectation(
            {"type": "json_path", "path": "$.id", "op": "exists"}
            | ({} if value is None else {"value": value})
        )
        assert outcome(expect, doc) is expected, value


def test_rung_at_least_on_both_ladders() -> None:
    assert outcome(RungAtLeast(value="sent"), text("delivered"), "sent_log") is Outcome.PASS
    assert outcome(RungAtLeast(value="delivered"), text("sent"), "sent_log") is Outcome.MISMATCH
    result = judge(RungAtLeast(value="delivered"), text("bounced"), probe_kind="sent_log")
    assert result.outcome is Outcome.MISMATCH and "not on the message ladder" in result.message
    assert outcome(RungAtLeast(value="answered"), text("completed"), "call_log") is Outcome.PASS
    assert outcome(RungAtLeast(value="answered"), text("ringing"), "call_log") is Outcome.MISMATCH
    with pytest.raises(ValueError):
        RungAtLeast(value="deliverd")


@pytest.mark.parametrize(
    ("body", "why"),
    [
        ('{"status": "failed", "status": "succeeded"}', "appears twice"),
        ('{"n": Infinity}', "Infinity is not a JSON number"),
        ('{"n": NaN}', "NaN is not a JSON number"),
        ('{"balance": 99.99999999999999999}', "cannot be compared exactly"),
        ('{"balance": 1e400}', "cannot be compared exactly"),
    ],
)
def test_json_a_proof_cannot_rest_on_is_never_a_pass(body: str, why: str) -> None:
    for expect in (
        JsonPath(path="$.status", op="==", value="succeeded"),
        JsonPath(path="$.n", op="!=", value=0),
        JsonPath(path="$.balance", op=">=", value=100),
        Equals(value={"status": "succeeded"}),
    ):
        got = judge(expect, text(body), probe_kind="http")
        assert got.outcome is not Outcome.PASS, (body, expect, got)
        assert why in got.message, got.message
    fine = judge(
        JsonPath(path="$.balance", op=">=", value=100),
        text('{"balance": 100.10}'),
        probe_kind="http",
    )
    assert fine.outcome is Outcome.PASS, fine.message


def test_non_empty_passes_anything_non_blank() -> None:
    assert outcome(NonEmpty(), text("0")) is Outcome.PASS  # the reason it is labelled weak
    assert outcome(NonEmpty(), text(" \n\t")) is Outcome.EMPTY


def test_missing_and_failed_claims_decide_before_the_expectation() -> None:
    missing = Reading(capture=Capture(), missing=True, note="no such object")
    assert outcome(NonEmpty(), missing) is Outcome.EMPTY
    assert outcome(Count(value=0), missing) is Outcome.EMPTY
    wrong = text("paid")
    wrong.failed_claims.append("amount 10; claimed 45")
    assert outcome(Contains(value="paid"), wrong) is Outcome.MISMATCH


# --- unknown expectations fail closed -----------------------------------------------------------


@pytest.mark.parametrize(
    "raw",
    [
        {"type": "nonEmpty"},
        {"type": "count_at_least", "value": 3},
        {},
        {"value": 45},
        None,
        "count",
    ],
)
def test_unknown_or_missing_expectation_is_an_error_never_a_pass(raw: object) -> None:
    with pytest.raises(InvalidContract):
        coerce_expectation(raw)


def test_unknown_expectation_type_in_a_json_contract_is_rejected() -> None:
    line = json.dumps(
        {
            "action": "a",
            "probe": {"kind": "command", "argv": ["echo", "0"]},
            "expect": {"type": "nonEmpty"},
        }
    )
    with pytest.raises(ValueError, match="nonEmpty"):
        Contract.model_validate_json(line)


def test_judge_refuses_an_object_it_does_not_know() -> None:
    with pytest.raises(TypeError):
        judge(object(), text("45"), probe_kind="command")


# --- before and after ---------------------------------------------------------------------------


def before_obs(outcome: Outcome, value: object, expectation: str = "count(45)") -> Observation:
    return Observation(
        outcome=outcome,
        expectation=expectation,
        kind="command",
        observer="t",
        observed_at=datetime.now(UTC),
        duration_ms=1.0,
        value=value,
    )


def after(expect: object, raw: str) -> Judgement:
    return judge(expect, text(raw), probe_kind="command")


def test_count_with_a_before_reading_compared_the_change_under_meaning_1() -> None:
    """Plans from before meanings were marked keep their grading: count judged the change."""
    c45 = Count(value=45)
    assert (
        judge_with_before(c45, after(c45, "45"), before_obs(Outcome.EMPTY, 0), meaning=1).outcome
        is Outcome.PASS
    )
    assert (
        judge_with_before(c45, after(c45, "45"), before_obs(Outcome.PASS, 45), meaning=1).outcome
        is Outcome.VACUOUS
    )
    assert (
        judge_with_before(
            c45, after(c45, "1045"), before_obs(Outcome.DUPLICATED, 1000), meaning=1
        ).outcome
        is Outcome.PASS
    )
    assert (
        judge_with_before(
            c45, after(c45, "1090"), before_obs(Outcome.DUPLICATED, 1000), meaning=1
        ).outcome
        is Outcome.DUPLICATED
    )
    assert (
        judge_with_before(
            c45, after(c45, "1000"), before_obs(Outcome.DUPLICATED, 1000), meaning=1
        ).outcome
        is Outcome.VACUOUS
    )
    assert (
        judge_with_before(
            c45, after(c45, "30"), before_obs(Outcome.MISMATCH, 30), meaning=1
        ).outcome
        is Outcome.EMPTY
    )
    assert (
        judge_with_before(
            c45, after(c45, "40"), before_obs(Outcome.MISMATCH, 30), meaning=1
        ).outcome
        is Outcome.MISMATCH
    )


def test_count_zero_compares_states_so_a_delete_can_be_proven() -> None:
    c0 = Count(value=0)
    assert (
        judge_with_before(
            c0, after(c0, "0"), before_obs(Outcome.DUPLICATED, 45, "count(0)")
        ).outcome
        is Outcome.PASS
    )
    assert (
        judge_with_before(c0, after(c0, "0"), before_obs(Outcome.PASS, 0, "count(0)")).outcome
        is Outcome.VACUOUS
    )


def test_any_pass_that_already_held_before_is_vacuous() -> None:
    exp = Contains(value="Team plan")
    lbl = label(exp)
    now = after(exp, "<h1>Team plan</h1>")
    assert (
        judge_with_before(exp, now, before_obs(Outcome.PASS, None, lbl)).outcome is Outcome.VACUOUS
    )
    assert (
        judge_with_before(exp, now, before_obs(Outcome.MISMATCH, None, lbl)).outcome is Outcome.PASS
    )


def test_a_before_reading_that_observed_nothing_cannot_make_a_pass() -> None:
    exp = Contains(value="x")
    result = judge_with_before(exp, after(exp, "x"), before_obs(Outcome.PROBE_ERROR, None))
    assert result.outcome is Outcome.PROBE_ERROR
    bad = after(exp, "y")
    assert (
        judge_with_before(exp, bad, before_obs(Outcome.PROBE_ERROR, None)).outcome
        is Outcome.MISMATCH
    )


# --- properties ---------------------------------------------------------------------------------

counts = st.integers(min_value=0, max_value=10**9)
words = st.text(alphabet=string.ascii_letters + string.digits + " .-_", min_size=1, max_size=30)


@given(n=counts, got=counts)
def test_property_count_passes_only_on_the_exact_number(n: int, got: int) -> None:
    result = outcome(Count(value=n), text(str(got)))
    if got == n:
        assert result is Outcome.PASS
    elif got > n:
        assert result is Outcome.DUPLICATED
    elif got == 0:
        assert result is Outcome.EMPTY
    else:
        assert result is Outcome.MISMATCH


@given(n=st.integers(min_value=1, max_value=10**6), raw=st.text(max_size=40))
def test_property_count_never_passes_on_text_that_is_not_the_number(n: int, raw: str) -> None:
    if raw.strip() in (str(n), f"+{n}") or raw.strip().lstrip("+").lstrip("0") == str(n):
        return
    assert outcome(Count(value=n), text(raw)) is not Outcome.PASS


@given(
    n=st.integers(min_value=-1000, max_value=1000), got=st.integers(min_value=-1000, max_value=1000)
)
def test_property_at_least(n: int, got: int) -> None:
    result = outcome(AtLeast(value=n), text(str(got)))
    assert (result is Outcome.PASS) == (got >= n)


@given(needle=words, hay=st.text(max_size=200))
def test_property_contains_matches_substring_semantics(needle: str, hay: str) -> None:
    result = outcome(Contains(value=needle), text(hay))
    if not hay.strip():
        assert result is Outcome.EMPTY
    else:
        assert (result is Outcome.PASS) == (needle in hay)


@given(word=words, other=words)
def test_property_regex_literal_behaves_like_search(word: str, other: str) -> None:
    import re

    result = outcome(Regex(value=re.escape(word)), text(other))
    if not other.strip():
        assert result is Outcome.EMPTY
    else:
        assert (result is Outcome.PASS) == (word in other)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(10**6), 10**6) | st.text(max_size=10),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=5), inner, max_size=4)
    ),
    max_leaves=12,
)


@given(value=json_values, other=json_values)
def test_property_equals_is_strict_json_equality(value: object, other: object) -> None:
    raw = json.dumps(other)
    result = outcome(Equals(value=value), text(raw))
    if isinstance(value, str):
        return  # strings compare to the raw text, covered above
    if not raw.strip():
        return
    assert (result is Outcome.PASS) == strict_equal(value, other)
    assert strict_equal(value, value)


@given(
    key=st.from_regex(r"[a-z_][a-z0-9_]{0,8}", fullmatch=True), value=json_values, other=json_values
)
def test_property_json_path_equality(key: str, value: object, other: object) -> None:
    doc = text(json.dumps({key: other}))
    result = outcome(JsonPath(path=f"$.{key}", value=value), doc)
    assert (result is Outcome.PASS) == strict_equal(other, value)


@given(
    status=st.sampled_from(["queued", "accepted", "sent", "delivered"]),
    want=st.sampled_from(["queued", "accepted", "sent", "delivered"]),
)
def test_property_rung_at_least_follows_the_message_ladder(status: str, want: str) -> None:
    ladder = ["queued", "accepted", "sent", "delivered"]
    result = outcome(RungAtLeast(value=want), text(status), "sent_log")
    assert (result is Outcome.PASS) == (ladder.index(status) >= ladder.index(want))


@given(raw=st.binary(max_size=200))
@settings(max_examples=200)
def test_property_non_empty_and_every_expectation_survive_any_bytes(raw: bytes) -> None:
    reading = Reading(capture=Capture.of(raw))
    for exp in (
        Count(value=3),
        AtLeast(value=1),
        Contains(value="a"),
        Regex(value="a+"),
        Equals(value=3),
        JsonPath(path="$.a", value=1),
        RungAtLeast(value="sent"),
        NonEmpty(),
    ):
        result = judge(exp, reading, probe_kind="command")
        assert isinstance(result.outcome, Outcome)
    blank = not raw.decode("utf-8", errors="replace").strip()
    assert (judge(NonEmpty(), reading, probe_kind="command").outcome is Outcome.EMPTY) == blank


def _typed(value: object) -> object:
    """An oracle independent of strict_equal: each value tagged with its JSON type, so true and
    1 differ at any depth while 45 and 45.0 stay one number."""
    if isinstance(value, bool):
        return ("bool", value)
    if isinstance(value, (int, float)):
        return ("number", float(value))
    if isinstance(value, list):
        return ("list", tuple(_typed(v) for v in value))
    if isinstance(value, dict):
        return ("object", tuple(sorted((k, _typed(v)) for k, v in value.items())))
    return (type(value).__name__, value)


@pytest.mark.parametrize(
    ("a", "b", "equal"),
    [
        ([True], [1], False),
        ({"a": True}, {"a": 1}, False),
        ([{"n": [0]}], [{"n": [False]}], False),
        ({"a": [45]}, {"a": [45.0]}, True),
        ([None], [0], False),
        (["45"], [45], False),
    ],
)
def test_strict_equal_holds_at_every_depth(a: object, b: object, equal: bool) -> None:
    assert strict_equal(a, b) is equal and strict_equal(b, a) is equal
    assert (_typed(a) == _typed(b)) is equal
    got = outcome(Equals(value=b), text(json.dumps(a)))
    assert (got is Outcome.PASS) is equal, (a, b, got)


@pytest.mark.slow
@given(value=json_values, other=json_values)
def test_property_strict_equal_agrees_with_a_typed_oracle(value: object, other: object) -> None:
    assert strict_equal(value, other) == (_typed(value) == _typed(other))


def test_a_printed_number_a_float_would_round_is_never_judged() -> None:
    for printed in ("99.99999999999999999", "1e999"):
        got = judge(AtLeast(value=100), text(printed), probe_kind="command")
        assert got.outcome is Outcome.MISMATCH and "cannot be judged exactly" in got.message
    assert outcome(AtLeast(value=100), text("100.10")) is Outcome.PASS


def test_the_17_digit_form_of_a_double_is_that_double() -> None:
    for printed, expected in (("0.10000000000000001", 0.1), ("99.900000000000006", 99.9)):
        got = judge(AtLeast(value=0.05), text(printed), probe_kind="command")
        assert got.outcome is Outcome.PASS, (printed, got.message)
        assert got.value == expected, got.value
    got = judge(AtLeast(value=100), text("99.999999999999999"), probe_kind="command")
    assert got.outcome is Outcome.MISMATCH, got.message  # 17 digits, but not a double's form


def test_two_readings_that_are_not_counts_never_make_a_count_by_their_difference() -> None:
    """sum(x) read 0.5 before and 45.5 after: neither is a whole count, so a change of 45 is no
    pass of count(45)."""
    c45 = Count(value=45)
    reading = Reading.of_json([{"s": 45.5}])
    reading.number, reading.value = 45.5, 45.5  # a record's one numeric cell, as SQL gives it
    alone = judge(c45, reading, probe_kind="record")
    assert alone.outcome is Outcome.MISMATCH and alone.value == 45.5
    got = judge_with_before(c45, alone, before_obs(Outcome.MISMATCH, 0.5))
    assert got.outcome is Outcome.MISMATCH and "not a whole count" in got.message


@pytest.mark.parametrize(
    ("expect", "weak"),
    [
        (Regex(value=".*"), True),
        (Regex(value="x?"), True),
        (Regex(value="^shipped$"), False),
        (AtLeast(value=0), True),
        (AtLeast(value=-1), True),
        (AtLeast(value=1), False),
        (NonEmpty(), True),
    ],
)
def test_an_expectation_every_output_meets_is_labelled_weak(expect: object, weak: bool) -> None:
    assert is_weak(CommandProbe(argv=["true"]), expect) is weak


@pytest.mark.parametrize("timeout", [float("inf"), 1e9, 3601])
def test_a_probe_timeout_past_an_hour_is_refused(timeout: float) -> None:
    with pytest.raises(ValueError, match="timeout_s"):
        CommandProbe(argv=["sleep", "100"], timeout_s=timeout)


@pytest.mark.parametrize(
    ("doc", "op", "value"),
    [
        ({"amount": "9"}, ">=", "10"),  # as text "9" >= "10"
        ({"amount": "100"}, "<", "20"),
    ],
)
def test_numbers_sent_as_text_are_not_ordered_as_text(doc: object, op: str, value: str) -> None:
    got = judge(
        JsonPath(path="$.amount", op=op, value=value), text(json.dumps(doc)), probe_kind="http"
    )
    assert got.outcome is Outcome.MISMATCH and "not comparable" in got.message
    dates = JsonPath(path="$.at", op=">=", value="2026-01-01")
    assert judge(dates, text('{"at": "2026-11-30"}'), probe_kind="http").outcome is Outcome.PASS


def test_json_path_contains_a_list_in_an_object_is_a_mismatch_not_a_probe_error() -> None:
    got = judge(JsonPath(path="$", op="contains", value=[1]), text('{"a": 1}'), probe_kind="http")
    assert got.outcome is Outcome.MISMATCH
