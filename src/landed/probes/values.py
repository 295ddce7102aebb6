"""Values in a reading as the judges see them: shown for a message, compared strictly, and read
as numbers (never guessed)."""

from __future__ import annotations

import json
import math
import re
from decimal import Decimal
from typing import Any

from landed.probes.reading import NO_VALUE, Reading, cut, exact_float

__all__ = [
    "REGEX_TIMEOUT_S",
    "compare",
    "is_number",
    "is_whole",
    "read_number",
    "short",
    "show",
    "strict_equal",
]

#: A regex gets this long on one reading; hostile output cannot stall the verifier.
REGEX_TIMEOUT_S = 1.0

_INT = re.compile(r"[+-]?[0-9]{1,30}")
_NUMBER = re.compile(
    r"[+-]?(?:[0-9]{1,30}(?:\.[0-9]{0,30})?|\.[0-9]{1,30})(?:[eE][+-]?[0-9]{1,3})?"
)


def show(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


def strict_equal(a: Any, b: Any) -> bool:
    """Equality where true is not 1 and "45" is not 45; 45 and 45.0 are equal."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if is_number(a) and is_number(b):
        return bool(a == b)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(strict_equal(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(strict_equal(a[k], b[k]) for k in a)
    if type(a) is not type(b) and not (isinstance(a, str) and isinstance(b, str)):
        return False
    return bool(a == b)


def is_number(value: Any) -> bool:
    if isinstance(value, bool) or not isinstance(value, (int, float, Decimal)):
        return False
    if isinstance(value, Decimal):
        return value.is_finite()
    return not (isinstance(value, float) and not math.isfinite(value))


def is_whole(value: Any) -> bool:
    """A number that is a count: 45, 45.0 or Decimal("45"), never 45.5."""
    return is_number(value) and value == int(value)


def short(text: str, limit: int = 80) -> str:
    return show(cut(text.strip(), limit))


def read_number(reading: Reading, *, whole: bool) -> tuple[Any, str | None]:
    """The number a reading shows, or None and why not (never a guess)."""
    if reading.number is not NO_VALUE:
        value = reading.number
        if is_number(value):
            if whole and value != int(value):
                return None, f"the probe returned {value}, which is not a whole count"
            return (int(value) if whole else value), None
        if isinstance(value, str):
            return _parse_number(value, reading, whole=whole)
        return None, f"the probe returned {short(show(value))}, which is not a number"
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
                f"the probe returned {short(stripped)}, which cannot be judged exactly (not "
                "finite, or more digits than a float holds); have it print a rounded number"
            )
        return exact, None
    kind = "whole number" if whole else "number"
    return None, f"the probe returned {short(stripped)}, which is not a {kind}"


_NUMERIC_TEXT = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")


def compare(actual: Any, op: str, wanted: Any) -> bool | None:
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
    comparable = (is_number(actual) and is_number(wanted)) or (
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
