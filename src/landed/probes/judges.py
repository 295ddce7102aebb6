"""The judges: one reading against one expectation (count, contains, regex, json_path, ...)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import regex

from landed.probes.contract import (
    AtLeast,
    Change,
    Contains,
    Count,
    Equals,
    JsonPath,
    NonEmpty,
    Outcome,
    Regex,
    RungAtLeast,
)
from landed.probes.jsonpath import MISSING, parse_path, resolve
from landed.probes.labels import label
from landed.probes.reading import NO_VALUE, Reading, cut, strict_json
from landed.probes.values import REGEX_TIMEOUT_S, compare, read_number, short, show, strict_equal
from landed.receipts.ladder import CALL_LADDER, MESSAGE_LADDER

__all__ = ["NEEDS_BEFORE", "Judgement", "compare_at_least", "compare_count", "judge"]


#: What a ``change`` says when no before-reading was given: never a pass, and how to get one.
NEEDS_BEFORE = (
    "a change is judged against a before-reading, and none was given, so nothing is proven; "
    "take one before the action (landed snapshot, then landed verify --before FILE; the "
    "UserPromptSubmit hook for landed guard; a task's pre-read), or expect count, at_least "
    "or equals to judge the value itself"
)


@dataclass(frozen=True)
class Judgement:
    outcome: Outcome
    message: str
    value: Any = None
    #: A ``change`` whose reading was a count: the before-reading decides (see expect).
    needs_before: bool = False


def _blank(reading: Reading) -> bool:
    if reading.value is not NO_VALUE:
        return reading.value is None or reading.value in ("", [], {})
    return not reading.text.strip()


def _empty(what: str = "nothing") -> Judgement:
    return Judgement(
        Outcome.EMPTY,
        f"the probe returned {what}; an empty result is reported as empty, not filled in",
    )


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
    count, why = read_number(reading, whole=True)
    if count is None:
        return Judgement(Outcome.MISMATCH, f"{why}; expected exactly {expect.value}")
    return compare_count(count, expect.value)


def compare_count(count: int, wanted: int) -> Judgement:
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


def _judge_change(expect: Change, reading: Reading) -> Judgement:
    """The count a change is taken from; on its own it is never a pass (fails closed)."""
    if (nothing := _no_number(reading)) is not None:
        return nothing
    count, why = read_number(reading, whole=True)
    if count is None:
        return Judgement(Outcome.MISMATCH, f"{why}; expected a change of {expect.value:+d}")
    return Judgement(
        Outcome.MISMATCH, f"the probe returned {count}; {NEEDS_BEFORE}", count, needs_before=True
    )


def _judge_at_least(expect: AtLeast, reading: Reading) -> Judgement:
    if (nothing := _no_number(reading)) is not None:
        return nothing
    number, why = read_number(reading, whole=False)
    if number is None:
        return Judgement(Outcome.MISMATCH, f"{why}; expected at least {expect.value}")
    return compare_at_least(number, expect.value)


def compare_at_least(number: Any, wanted: Any) -> Judgement:
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
        return Judgement(Outcome.PASS, f"the probe returned output containing {show(expect.value)}")
    scope = (
        ""
        if reading.capture.complete
        else f" (searched the first {len(reading.capture.data)} bytes)"
    )
    return Judgement(
        Outcome.MISMATCH,
        f"the probe returned {reading.capture.total} bytes without {show(expect.value)}{scope}",
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
            f"the probe returned output matching {show(expect.value)}",
            # Marked where cut, so the redactor can still find a secret's start in it.
            cut(found.group(0), 200),
        )
    return Judgement(
        Outcome.MISMATCH, f"the probe returned output not matching {show(expect.value)}"
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
        return NO_VALUE, f"the probe returned {short(reading.text)}, which is not JSON"
    except ValueError as exc:
        return NO_VALUE, f"the probe returned {short(reading.text)}, which cannot be judged: {exc}"


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
                f"{len(reading.capture.data)} kept, so it cannot equal {short(show(wanted))}",
            )
        actual = reading.text.rstrip("\r\n")
    else:
        actual, why = _document(reading)
        if actual is NO_VALUE:
            return Judgement(Outcome.MISMATCH, f"{why}; expected {show(wanted)}")
    if strict_equal(actual, wanted):
        return Judgement(Outcome.PASS, f"the probe returned {short(show(actual))}", actual)
    return Judgement(
        Outcome.MISMATCH,
        f"the probe returned {short(show(actual))}; expected {show(wanted)}",
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
    ok = compare(found, expect.op, expect.value)
    said = (
        f"the probe returned {expect.path} = {short(show(found))}; "
        f"expected {expect.op} {show(expect.value)}"
    )
    if ok is None:
        return Judgement(Outcome.MISMATCH, said + " (not comparable)", found)
    return Judgement(Outcome.PASS if ok else Outcome.MISMATCH, said, found)


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
            Outcome.MISMATCH, f"the probe returned {short(show(status))}, not a status"
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
            f"the probe returned status {short(status)}, which is not on the {name} ladder "
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
    elif isinstance(expect, Change):
        result = _judge_change(expect, reading)
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
    return Judgement(result.outcome, result.message, value, result.needs_before)
