"""Expectations: their labels, and the judgement of one reading (and its before) against one."""

from __future__ import annotations

from typing import Any

from landed.probes.contract import AtLeast, Count, Observation, Outcome
from landed.probes.judges import Judgement, judge
from landed.probes.labels import claims_of, is_weak, label, label_for
from landed.probes.values import REGEX_TIMEOUT_S, is_number, is_whole, strict_equal

__all__ = [
    "REGEX_TIMEOUT_S",
    "Judgement",
    "claims_of",
    "is_weak",
    "judge",
    "judge_with_before",
    "label",
    "label_for",
    "strict_equal",
]


_HELD = (Outcome.PASS, Outcome.DUPLICATED)


def judge_with_before(expect: Any, after: Judgement, before: Observation) -> Judgement:
    """Compare an after reading with the before reading of the same probe.

    Counts (``count(n)`` with n > 0 and ``at_least``) compare the change after - before, so a
    probe over a whole table still proves "45 inserted". ``count(0)`` and every other
    expectation compare states: if the before reading already passed, the after pass is
    ``vacuous``. A before reading that observed nothing cannot rule a vacuous pass out, so a
    pass after it is reported as probe-error, never as pass.
    """
    if before.outcome is Outcome.PROBE_ERROR:
        if after.outcome is Outcome.PASS:
            return Judgement(
                Outcome.PROBE_ERROR,
                "the before reading observed nothing, so this pass cannot be told apart from a "
                f"state that already held ({before.message}); nothing is proven",
                after.value,
            )
        return after
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
        return Judgement(
            Outcome.VACUOUS,
            f"{after.message}; but the before reading already passed, so the expected state held "
            "before the action and this reading proves nothing about it",
            after.value,
        )
    return after
