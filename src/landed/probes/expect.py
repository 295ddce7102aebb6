"""Expectations: their labels, and the judgement of one reading (and its before) against one."""

from __future__ import annotations

from typing import Any

from landed.probes.contract import AtLeast, Change, Count, Observation, Outcome
from landed.probes.judges import NEEDS_BEFORE, Judgement, compare_at_least, compare_count, judge
from landed.probes.labels import claims_of, is_weak, label, label_for
from landed.probes.values import REGEX_TIMEOUT_S, is_number, is_whole, strict_equal

__all__ = [
    "LEGACY_MEANING",
    "MEANING",
    "MEANINGS",
    "NEEDS_BEFORE",
    "REGEX_TIMEOUT_S",
    "Judgement",
    "claims_of",
    "is_weak",
    "judge",
    "judge_with_before",
    "label",
    "label_for",
    "strict_equal",
    "value_outcome",
]

#: What count, at_least and equals mean. 2: the value read, everywhere; the change from the
#: before-reading is its own expectation (``change``). 1: plans settled before meanings were
#: marked, where count(n > 0) and at_least judged the change whenever a before-reading was
#: given. New plans and receipts carry 2; a plan or receipt that carries none is 1.
MEANING = 2
LEGACY_MEANING = 1
MEANINGS = (LEGACY_MEANING, MEANING)

_HELD = (Outcome.PASS, Outcome.DUPLICATED)


def judge_with_before(
    expect: Any, after: Judgement, before: Observation | None, *, meaning: int = MEANING
) -> Judgement:
    """The one judging entry point after ``judge``: the after judgement, held to the before
    reading of the same probe when there is one.

    A pass whose state already held before is ``vacuous``; a count above what is expected is
    ``duplicated`` only if it grew; a ``change`` is judged on after - before, and without a
    before it stays the mismatch ``judge`` made of it. A before reading that observed nothing
    cannot rule a vacuous pass out, so a pass after it is reported as probe-error.
    """
    if meaning not in MEANINGS:
        raise ValueError(f"unknown expectation meaning {meaning!r}; known: {MEANINGS}")
    if before is None:
        return after
    if before.outcome is Outcome.PROBE_ERROR:
        if after.outcome is Outcome.PASS or after.needs_before:
            return Judgement(
                Outcome.PROBE_ERROR,
                "the before reading observed nothing, so this reading cannot be told apart from "
                f"a state that already held ({before.message}); nothing is proven",
                after.value,
            )
        return after
    if isinstance(expect, Change):
        return _change(expect, after, before)
    if meaning == LEGACY_MEANING:
        return _legacy(expect, after, before)
    if after.outcome is Outcome.PASS and before.outcome is Outcome.PASS:
        return _vacuous(after)
    grew = is_number(after.value) and is_number(before.value) and after.value > before.value
    if after.outcome is Outcome.DUPLICATED and not grew:
        return Judgement(
            Outcome.MISMATCH,
            f"{after.message}; it read {before.value} before the action already, so the action "
            "added nothing to it",
            after.value,
        )
    return after


def value_outcome(expect: Any, value: Any) -> Outcome | None:
    """What a count or at_least makes of ``value`` alone (meaning 2), or None where the value
    does not decide (another expectation, or no number): so a pass can be checked against the
    value it was read with."""
    if isinstance(expect, Count) and is_whole(value):
        return compare_count(int(value), expect.value).outcome
    if isinstance(expect, AtLeast) and is_number(value):
        return compare_at_least(value, expect.value).outcome
    return None


def _vacuous(after: Judgement) -> Judgement:
    return Judgement(
        Outcome.VACUOUS,
        f"{after.message}; but the before reading already passed, so the expected state held "
        "before the action and this reading proves nothing about it",
        after.value,
    )


def _change(expect: Change, after: Judgement, before: Observation) -> Judgement:
    """after - before against the signed change. A reading judged mismatched for itself (not a
    count, a typed claim that failed) stays so; so does anything that read no count."""
    if not after.needs_before and after.outcome in (Outcome.MISMATCH, Outcome.PROBE_ERROR):
        return after
    if not (is_whole(after.value) and is_whole(before.value)):
        if not after.needs_before:
            return after
        return Judgement(
            Outcome.MISMATCH,
            f"the probe returned {after.value} after and {before.value} before, which is not a "
            f"count, so no change can be taken; expected a change of {expect.value:+d}",
            after.value,
        )
    delta = int(after.value) - int(before.value)
    wanted = expect.value
    said = (
        f"the probe returned {after.value} after and {before.value} before: a change of {delta:+d}"
    )
    if delta == wanted:
        return Judgement(Outcome.PASS, f"{said}; expected {wanted:+d}", after.value)
    if delta == 0:
        return Judgement(Outcome.EMPTY, f"{said}; nothing landed", after.value)
    if (delta > 0) == (wanted > 0) and abs(delta) > abs(wanted):
        return Judgement(
            Outcome.DUPLICATED, f"{said}; expected {wanted:+d}: more than claimed", after.value
        )
    return Judgement(Outcome.MISMATCH, f"{said}; expected {wanted:+d}", after.value)


def _legacy(expect: Any, after: Judgement, before: Observation) -> Judgement:
    """Meaning 1, kept so a plan settled under it grades as it did: counts (``count(n)`` with
    n > 0 and ``at_least``) compare the change after - before; every other expectation compares
    states."""
    numeric = (isinstance(expect, Count) and expect.value > 0) or isinstance(expect, AtLeast)
    # A count's change is taken between two counts only: a reading that failed as "not a whole
    # count" (45.5) stays failed, however the difference of two of them comes out.
    counts = not isinstance(expect, Count) or (is_whole(after.value) and is_whole(before.value))
    if numeric and counts and is_number(after.value) and is_number(before.value):
        delta = after.value - before.value
        wanted = expect.value
        said = (
            f"the probe returned {after.value} after and {before.value} before: a change of {delta}"
        )
        if delta == 0:
            if before.outcome in _HELD:
                return Judgement(
                    Outcome.VACUOUS,
                    f"{said}; the expected state already held before the action, so this "
                    "reading proves nothing about it",
                    after.value,
                )
            return Judgement(Outcome.EMPTY, f"{said}; nothing landed", after.value)
        if isinstance(expect, Count):
            if delta == wanted:
                return Judgement(Outcome.PASS, f"{said}; expected {wanted}", after.value)
            if delta > wanted:
                return Judgement(
                    Outcome.DUPLICATED,
                    f"{said}; expected {wanted}: more landed than claimed",
                    after.value,
                )
            return Judgement(Outcome.MISMATCH, f"{said}; expected {wanted}", after.value)
        ok = delta >= wanted
        return Judgement(
            Outcome.PASS if ok else Outcome.MISMATCH,
            f"{said}; expected at least {wanted}",
            after.value,
        )
    if after.outcome is Outcome.PASS and before.outcome is Outcome.PASS:
        return _vacuous(after)
    return after
