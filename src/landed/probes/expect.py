"""Expectations: their labels, and the judgement of one reading (and its before) against one."""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import regex

from landed.probes.contract import (
    AtLeast,
    Contains,
    Count,
    DeploymentProbe,
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
from landed.probes.jsonpath import MISSING, parse_path, resolve
from landed.probes.reading import NO_VALUE, Reading, cut, exact_float, strict_json
from landed.receipts.ladder import CALL_LADDER, MESSAGE_LADDER

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

#: A regex gets this long on one reading; hostile output cannot stall the verifier.
REGEX_TIMEOUT_S = 1.0

_INT = re.compile(r"[+-]?[0-9]{1,30}")
_NUMBER = re.compile(
    r"[+-]?(?:[0-9]{1,30}(?:\.[0-9]{0,30})?|\.[0-9]{1,30})(?:[eE][+-]?[0-9]{1,3})?"
)


def _show(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


def label(expect: Any) -> str:
    """The label every verdict carries: count(45), contains("200"), non_empty (weak default)."""
    if isinstance(expect, Count):
        return f"count({expect.value})"
    if isinstance(expect, AtLeast):
        return f"at_least({expect.value})"
    if isinstance(expect, Contains):
        return f"contains({_show(expect.value)})"
    if isinstance(expect, Equals):
        return f"equals({_show(expect.value)})"
    if isinstance(expect, Regex):
        return f"regex({_show(expect.value)})"
    if isinstance(expect, JsonPath):
        if expect.op == "exists":
            wanted = "exists" if expect.value is None or expect.value is True else "is absent"
            return f"json_path({expect.path} {wanted})"
        return f"json_path({expect.path} {expect.op} {_show(expect.value)})"
    if isinstance(expect, RungAtLeast):
        return f"rung_at_least({expect.value})"
    if isinstance(expect, NonEmpty):
        return "non_empty (weak default)"
    raise TypeError(f"not an expectation: {type(expect).__name__}")


def claims_of(probe: Any) -> list[str]:
    """Typed fields a probe claims (a payment's amount, a file's sha256), checked on read."""
    claims: list[str] = []
    if isinstance(probe, PaymentProbe):
        for name in ("amount", "currency", "status"):
            value = getattr(probe, name)
            if value is not None:
                claims.append(f"{name}={_show(value)}")
    elif isinstance(probe, DeploymentProbe):
        if probe.version is not None:
            claims.append(f"version={_show(probe.version)}")
        if probe.sha256 is not None:
            claims.append(f"sha256={probe.sha256.lower()}")
    elif isinstance(probe, FileProbe):
        if probe.size is not None:
            claims.append(f"size={probe.size}")
        if probe.sha256 is not None:
            claims.append(f"sha256={probe.sha256.lower()}")
    return claims


def is_weak(probe: Any, expect: Any) -> bool:
    """Weak: any non-empty output would pass. non_empty with no typed claim beside it; so do
    a regex that an empty match satisfies (``.*``, ``x?``) and at_least of 0 or less on a
    count, which every count meets."""
    if claims_of(probe):
        return False
    if isinstance(expect, NonEmpty):
        return True
    if isinstance(expect, AtLeast):
        return expect.value <= 0
    if isinstance(expect, Regex):
        try:
            return regex.search(expect.value, "", timeout=REGEX_TIMEOUT_S) is not None
        except (TimeoutError, regex.error):
            return False
    return False


def label_for(probe: Any, expect: Any) -> str:
    claims = claims_of(probe)
    if not claims:
        return label(expect)
    head = f"{probe.kind}({', '.join(claims)})"
    return head if isinstance(expect, NonEmpty) else f"{head} and {label(expect)}"


@dataclass(frozen=True)
class Judgement:
    outcome: Outcome
    message: str
    value: Any = None


def strict_equal(a: Any, b: Any) -> bool:
    """Equality where true is not 1 and "45" is not 45; 45 and 45.0 are equal."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if _is_number(a) and _is_number(b):
        return bool(a == b)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(strict_equal(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(strict_equal(a[k], b[k]) for k in a)
    if type(a) is not type(b) and not (isinstance(a, str) and isinstance(b, str)):
        return False
    return bool(a == b)


def _is_number(value: Any) -> bool:
    if isinstance(value, bool) or not isinstance(value, (int, float, Decimal)):
        return False
    if isinstance(value, Decimal):
        return value.is_finite()
    return not (isinstance(value, float) and not math.isfinite(value))


def _is_whole(value: Any) -> bool:
    """A number that is a count: 45, 45.0 or Decimal("45"), never 45.5."""
    return _is_number(value) and value == int(value)


def _short(text: str, limit: int = 80) -> str:
    return _show(cut(text.strip(), limit))


def _blank(reading: Reading) -> bool:
    if reading.value is not NO_VALUE:
        return reading.value is None or reading.value in ("", [], {})
    return not reading.text.strip()


def _empty(what: str = "nothing") -> Judgement:
    return Judgement(
        Outcome.EMPTY,
        f"the probe returned {what}; an empty result is reported as empty, not filled in",
    )


def _number(reading: Reading, *, whole: bool) -> tuple[Any, str | None]:
    """The number a reading shows, or None and why not (never a guess)."""
    if reading.number is not NO_VALUE:
        value = reading.number
        if _is_number(value):
            if whole and value != int(value):
                return None, f"the probe returned {value}, which is not a whole count"
            return (int(value) if whole else value), None
        if isinstance(value, str):
            return _parse_number(value, reading, whole=whole)
        return None, f"the probe returned {_short(_show(value))}, which is not a number"
    return _parse_number(reading.text, reading, whole=whole)


def _parse_number(text: str, reading: Reading, *, whole: bool) -> tuple[Any, str | None]:
    if not reading.capture.complete:
        return None, (
            f"the probe returned {reading.capture.total} bytes, far more than a number; "
            "not read as one"
        )
    stripped = text.strip()
    pattern = _INT if whole else _NUMBER
    if pattern.fullmatch(stripped):
        if whole:
            return int(stripped), None
        if not any(c in stripped for c in ".eE"):
            return int(stripped), None
        exact = exact_float(stripped)
        if exact is None:
            return None, (
                f"the probe returned {_short(stripped)}, which cannot be judged exactly (not "
                "finite, or more digits than a float holds); have it print a rounded number"
            )
        return exact, None
    kind = "whole number" if whole else "number"
    return None, f"the probe returned {_short(stripped)}, which is not a {kind}"


def _no_number(reading: Reading) -> Judgement | None:
    """``empty`` when the probe returned NULL or nothing at all: neither is a count of 0."""
    if reading.number is None:
        return _empty("NULL (not a count of 0)")
    if reading.number is NO_VALUE and _blank(reading):
        return _empty("no output (not a count of 0)")
    return None


def _judge_count(expect: Count, reading: Reading) -> Judgement:
    if (nothing := _no_number(reading)) is not None:
        return nothing
    count, why = _number(reading, whole=True)
    if count is None:
        return Judgement(Outcome.MISMATCH, f"{why}; expected exactly {expect.value}")
    return _compare_count(count, expect.value)


def _compare_count(count: int, wanted: int) -> Judgement:
    if count == wanted:
        return Judgement(
            Outcome.PASS, f"the probe returned {count}; expected exactly {wanted}", count
        )
    if count > wanted:
        return Judgement(
            Outcome.DUPLICATED,
            f"the probe returned {count}; expected exactly {wanted}: more landed than claimed",
            count,
        )
    if count == 0:
        return Judgement(
            Outcome.EMPTY, f"the probe returned 0; expected exactly {wanted}: nothing landed", 0
        )
    return Judgement(
        Outcome.MISMATCH, f"the probe returned {count}; expected exactly {wanted}", count
    )


def _judge_at_least(expect: AtLeast, reading: Reading) -> Judgement:
    if (nothing := _no_number(reading)) is not None:
        return nothing
    number, why = _number(reading, whole=False)
    if number is None:
        return Judgement(Outcome.MISMATCH, f"{why}; expected at least {expect.value}")
    return _compare_at_least(number, expect.value)


def _compare_at_least(number: Any, wanted: Any) -> Judgement:
    said = f"the probe returned {number}; expected at least {wanted}"
    if number >= wanted:
        return Judgement(Outcome.PASS, said, number)
    if number == 0:
        return Judgement(Outcome.EMPTY, said + ": nothing landed", number)
    return Judgement(Outcome.MISMATCH, said, number)


def _judge_contains(expect: Contains, reading: Reading) -> Judgement:
    if _blank(reading):
        return _empty()
    if expect.value in reading.text:
        return Judgement(
            Outcome.PASS, f"the probe returned output containing {_show(expect.value)}"
        )
    scope = (
        ""
        if reading.capture.complete
        else f" (searched the first {len(reading.capture.data)} bytes)"
    )
    return Judgement(
        Outcome.MISMATCH,
        f"the probe returned {reading.capture.total} bytes without {_show(expect.value)}{scope}",
    )


def _judge_regex(expect: Regex, reading: Reading) -> Judgement:
    if _blank(reading):
        return _empty()
    if not reading.capture.complete:
        # Unlike a substring, a pattern can match because the output stops where it was cut
        # ($, \Z, a lookahead that finds nothing after the cut), so a cut output is not judged.
        return Judgement(
            Outcome.MISMATCH,
            f"the probe returned {reading.capture.total} bytes, more than the "
            f"{len(reading.capture.data)} kept for matching, and a regex is judged only on "
            f"whole output; expect contains instead, or narrow what the probe returns",
        )
    try:
        found = regex.search(expect.value, reading.text, timeout=REGEX_TIMEOUT_S)
    except TimeoutError:
        return Judgement(
            Outcome.PROBE_ERROR,
            f"the regex did not finish within {REGEX_TIMEOUT_S}s on {len(reading.capture.data)} "
            "bytes, so the output was not judged; simplify the pattern",
        )
    except regex.error as exc:
        return Judgement(Outcome.PROBE_ERROR, f"the regex does not compile: {exc}")
    if found is not None:
        return Judgement(
            Outcome.PASS,
            f"the probe returned output matching {_show(expect.value)}",
            # Marked where cut, so the redactor can still find a secret's start in it.
            cut(found.group(0), 200),
        )
    return Judgement(
        Outcome.MISMATCH, f"the probe returned output not matching {_show(expect.value)}"
    )


def _document(reading: Reading) -> tuple[Any, str | None]:
    if reading.document is not NO_VALUE:
        return reading.document, None
    if not reading.capture.complete:
        return (
            NO_VALUE,
            f"the probe returned {reading.capture.total} bytes, too many to parse as JSON",
        )
    try:
        return strict_json(reading.capture.data), None
    except (json.JSONDecodeError, RecursionError):
        return NO_VALUE, f"the probe returned {_short(reading.text)}, which is not JSON"
    except ValueError as exc:
        return NO_VALUE, f"the probe returned {_short(reading.text)}, which cannot be judged: {exc}"


def _judge_equals(expect: Equals, reading: Reading) -> Judgement:
    if _blank(reading):
        return _empty()
    wanted = expect.value
    if reading.value is not NO_VALUE:
        actual = reading.value
    elif isinstance(wanted, str):
        if not reading.capture.complete:
            return Judgement(
                Outcome.MISMATCH,
                f"the probe returned {reading.capture.total} bytes, more than the "
                f"{len(reading.capture.data)} kept, so it cannot equal {_short(_show(wanted))}",
            )
        actual = reading.text.rstrip("\r\n")
    else:
        actual, why = _document(reading)
        if actual is NO_VALUE:
            return Judgement(Outcome.MISMATCH, f"{why}; expected {_show(wanted)}")
    if strict_equal(actual, wanted):
        return Judgement(Outcome.PASS, f"the probe returned {_short(_show(actual))}", actual)
    return Judgement(
        Outcome.MISMATCH,
        f"the probe returned {_short(_show(actual))}; expected {_show(wanted)}",
        actual,
    )


def _judge_json_path(expect: JsonPath, reading: Reading) -> Judgement:
    if _blank(reading) and reading.document is NO_VALUE:
        return _empty()
    document, why = _document(reading)
    if document is NO_VALUE:
        return Judgement(Outcome.MISMATCH, f"{why}; expected {label(expect)}")
    found = resolve(document, parse_path(expect.path))
    if expect.op == "exists":
        want_present = expect.value is None or expect.value is True
        present = found is not MISSING
        said = f"{expect.path} is {'present' if present else 'absent'}"
        return Judgement(
            Outcome.PASS if present == want_present else Outcome.MISMATCH,
            f"the probe returned JSON where {said}",
        )
    if found is MISSING:
        return Judgement(Outcome.MISMATCH, f"the probe returned JSON without {expect.path}")
    ok = _compare(found, expect.op, expect.value)
    said = (
        f"the probe returned {expect.path} = {_short(_show(found))}; "
        f"expected {expect.op} {_show(expect.value)}"
    )
    if ok is None:
        return Judgement(Outcome.MISMATCH, said + " (not comparable)", found)
    return Judgement(Outcome.PASS if ok else Outcome.MISMATCH, said, found)


_NUMERIC_TEXT = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")


def _compare(actual: Any, op: str, wanted: Any) -> bool | None:
    if op == "==":
        return strict_equal(actual, wanted)
    if op == "!=":
        return not strict_equal(actual, wanted)
    if op == "contains":
        if isinstance(actual, str) and isinstance(wanted, str):
            return wanted in actual
        if isinstance(actual, list):
            return any(strict_equal(item, wanted) for item in actual)
        if isinstance(actual, dict):
            # A key is text: a list or an object as the value names no key (and cannot be
            # hashed), a contract error, not something a re-read could change.
            return wanted in actual if isinstance(wanted, str) else None
        return None
    # Text orders as text (ISO dates, versions of one width); text that reads as a number
    # would order "9" above "10", so it is not compared: send the number as a number.
    comparable = (_is_number(actual) and _is_number(wanted)) or (
        isinstance(actual, str)
        and isinstance(wanted, str)
        and not (_NUMERIC_TEXT.fullmatch(actual.strip()) or _NUMERIC_TEXT.fullmatch(wanted.strip()))
    )
    if not comparable:
        return None
    if op == ">=":
        return bool(actual >= wanted)
    if op == "<=":
        return bool(actual <= wanted)
    if op == ">":
        return bool(actual > wanted)
    return bool(actual < wanted)


def _ladder_for(probe_kind: str, rung: str) -> tuple[str, tuple[str, ...]]:
    if probe_kind == "call_log" or (probe_kind != "sent_log" and rung not in MESSAGE_LADDER):
        return "call", CALL_LADDER
    return "message", MESSAGE_LADDER


def _judge_rung(expect: RungAtLeast, reading: Reading, probe_kind: str) -> Judgement:
    if _blank(reading):
        return _empty()
    status = reading.value if reading.value is not NO_VALUE else reading.text.strip()
    if not isinstance(status, str):
        return Judgement(
            Outcome.MISMATCH, f"the probe returned {_short(_show(status))}, not a status"
        )
    status = status.strip().lower()
    name, ladder = _ladder_for(probe_kind, expect.value)
    order = " < ".join(ladder)
    if expect.value not in ladder:
        return Judgement(
            Outcome.MISMATCH, f"{expect.value} is not a rung of the {name} ladder ({order})", status
        )
    if status not in ladder:
        return Judgement(
            Outcome.MISMATCH,
            f"the probe returned status {_short(status)}, which is not on the {name} ladder "
            f"({order})",
            status,
        )
    ok = ladder.index(status) >= ladder.index(expect.value)
    return Judgement(
        Outcome.PASS if ok else Outcome.MISMATCH,
        f"the probe returned status {status}; expected at least {expect.value} ({order})",
        status,
    )


def _judge_non_empty(reading: Reading) -> Judgement:
    if _blank(reading):
        return _empty()
    if reading.auto_cell and reading.number == 0:
        # select count(*) that counted nothing returned a row, yet nothing landed; an exit code
        # of 0 is a value that is there. The weak default cannot tell them apart, so it is no
        # pass, and no "empty" either (after an act error that would run the act again).
        return Judgement(
            Outcome.MISMATCH,
            "the query returned the single number 0, and non_empty cannot tell a count of "
            "nothing from a value of 0: expect count or at_least for a count, or set "
            "measure to value for a value",
        )
    return Judgement(
        Outcome.PASS,
        f"the probe returned {reading.capture.total} bytes; any non-empty output passes this "
        "weak default",
    )


def judge(expect: Any, reading: Reading, *, probe_kind: str) -> Judgement:
    """Judge one reading. Typed claims and a missing object decide first; then the expectation.

    Unknown expectation objects raise TypeError: a caller that gets past validation with
    something else must fail, never fall back to a weaker check.
    """
    if reading.missing:
        return _empty(reading.note or "nothing: the object is not there")
    if reading.failed_claims:
        return Judgement(Outcome.MISMATCH, "; ".join(reading.failed_claims))
    if isinstance(expect, Count):
        result = _judge_count(expect, reading)
    elif isinstance(expect, AtLeast):
        result = _judge_at_least(expect, reading)
    elif isinstance(expect, Contains):
        result = _judge_contains(expect, reading)
    elif isinstance(expect, Regex):
        result = _judge_regex(expect, reading)
    elif isinstance(expect, Equals):
        result = _judge_equals(expect, reading)
    elif isinstance(expect, JsonPath):
        result = _judge_json_path(expect, reading)
    elif isinstance(expect, RungAtLeast):
        result = _judge_rung(expect, reading, probe_kind)
    elif isinstance(expect, NonEmpty):
        result = _judge_non_empty(reading)
    else:
        raise TypeError(f"unknown expectation {type(expect).__name__}: refusing to judge")
    value = result.value
    if value is None and reading.value is not NO_VALUE:
        value = reading.value
    if reading.checked_claims and result.outcome is Outcome.PASS:
        claims = ", ".join(reading.checked_claims)
        if isinstance(expect, NonEmpty):
            return Judgement(result.outcome, f"the probe returned {claims}, as claimed", value)
        return Judgement(result.outcome, f"{claims} as claimed; {result.message}", value)
    return Judgement(result.outcome, result.message, value)


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
    counts = not isinstance(expect, Count) or (_is_whole(after.value) and _is_whole(before.value))
    if numeric and counts and _is_number(after.value) and _is_number(before.value):
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
