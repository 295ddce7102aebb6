"""One meaning per expectation: count, at_least and equals judge the value read; change judges
after - before; vacuous and duplicated stay defined against the before-state."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from landed.probes.coerce import coerce_expectation
from landed.probes.contract import Observation, Outcome
from landed.probes.expect import judge, judge_with_before, label
from landed.probes.reading import Capture, Reading
from landed.probes.verdict import InvalidContract


def _expect(kind: str, value: Any) -> Any:
    return coerce_expectation({"type": kind, "value": value})


def _judged(expect: Any, after: str, before: str | None) -> tuple[Outcome, str]:
    """The outcome of ``after`` against ``expect``, held to ``before`` (read the same way)."""

    def reading(raw: str) -> Reading:
        return Reading(capture=Capture.of(raw.encode()))

    then = None
    if before is not None:
        first = judge(expect, reading(before), probe_kind="command")
        then = Observation(
            outcome=first.outcome,
            expectation=label(expect),
            kind="command",
            observer="t",
            observed_at=datetime.now(UTC),
            duration_ms=1.0,
            value=first.value,
        )
    now = judge(expect, reading(after), probe_kind="command")
    got = judge_with_before(expect, now, then)
    return got.outcome, got.message


def test_count_judges_the_value_even_with_a_before_reading() -> None:
    """20 rows there, 45 inserted: 65 exist, so "45 exist" is not done; 20 there and 25
    inserted: 45 exist, so it is."""
    c45 = _expect("count", 45)
    assert _judged(c45, "65", "20")[0] is not Outcome.PASS
    assert _judged(c45, "45", "20")[0] is Outcome.PASS
    assert _judged(c45, "45", None)[0] is Outcome.PASS


def test_at_least_and_equals_judge_the_value_and_an_already_held_state_is_vacuous() -> None:
    a45 = _expect("at_least", 45)
    assert _judged(a45, "50", "20")[0] is Outcome.PASS
    assert _judged(a45, "30", "10")[0] is Outcome.MISMATCH  # a change of 20 is no 45 rows
    assert _judged(a45, "95", "50")[0] is Outcome.VACUOUS  # 45 were there before the act
    eq = _expect("equals", "shipped")
    assert _judged(eq, "shipped", "pending")[0] is Outcome.PASS
    assert _judged(eq, "shipped", "shipped")[0] is Outcome.VACUOUS
    assert _judged(_expect("count", 45), "45", "45")[0] is Outcome.VACUOUS


def test_duplicated_is_a_count_that_grew_past_what_is_expected() -> None:
    c45 = _expect("count", 45)
    assert _judged(c45, "90", "45")[0] is Outcome.DUPLICATED
    outcome, message = _judged(c45, "90", "90")
    assert outcome is Outcome.MISMATCH and "added nothing" in message


@pytest.mark.parametrize(
    ("change", "before", "after", "want"),
    [
        (45, "20", "65", Outcome.PASS),
        (45, "20", "45", Outcome.MISMATCH),
        (45, "20", "110", Outcome.DUPLICATED),
        (45, "20", "20", Outcome.EMPTY),
        (45, "20", "0", Outcome.MISMATCH),
        (-3, "10", "7", Outcome.PASS),
        (-3, "10", "4", Outcome.DUPLICATED),
        (-3, "10", "13", Outcome.MISMATCH),
    ],
)
def test_change_judges_after_minus_before(
    change: int, before: str, after: str, want: Outcome
) -> None:
    assert _judged(_expect("change", change), after, before)[0] is want


def test_a_change_without_a_before_reading_fails_closed_and_says_how_to_take_one() -> None:
    outcome, message = _judged(_expect("change", 45), "45", None)
    assert outcome is Outcome.MISMATCH
    assert "before-reading" in message and "landed snapshot" in message


def test_a_change_is_never_taken_from_readings_that_are_not_counts() -> None:
    ch = _expect("change", 45)
    assert _judged(ch, "45.5", "0.5")[0] is Outcome.MISMATCH
    assert _judged(ch, "", "0")[0] is Outcome.EMPTY


def test_change_is_labelled_with_its_sign_and_zero_is_refused() -> None:
    assert label(_expect("change", 45)) == "change(+45)"
    assert label(_expect("change", -3)) == "change(-3)"
    with pytest.raises(InvalidContract, match="change of 0"):
        _expect("change", 0)
    with pytest.raises(InvalidContract):
        _expect("change", True)


def test_meaning_1_keeps_judging_counts_by_their_change() -> None:
    """A plan settled before meanings were marked grades as it did."""
    c45 = _expect("count", 45)
    now = judge(c45, Reading(capture=Capture.of(b"65")), probe_kind="command")
    then = Observation(
        outcome=Outcome.MISMATCH,
        expectation="count(45)",
        kind="command",
        observer="t",
        observed_at=datetime.now(UTC),
        duration_ms=1.0,
        value=20,
    )
    assert judge_with_before(c45, now, then, meaning=1).outcome is Outcome.PASS
    assert judge_with_before(c45, now, then, meaning=2).outcome is Outcome.DUPLICATED
    with pytest.raises(ValueError, match="meaning"):
        judge_with_before(c45, now, then, meaning=3)
