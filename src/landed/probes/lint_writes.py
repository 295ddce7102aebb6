"""The bad writes plan lint tries, as made-up readings: what a probe returns for each.

Values are built from the expectation's own value (``landed.probes.lint`` finds the good
write among ``candidates``); each bad write is a change of that write's before and after.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from typing import Any

from landed.probes.jsonpath import parse_path
from landed.probes.reading import Capture, Reading

__all__ = [
    "ERROR",
    "NOTHING",
    "SCENARIOS",
    "bad_writes",
    "bump",
    "candidates",
    "reading_of",
    "shown",
    "wrapper",
]


class _Nothing:
    def __repr__(self) -> str:
        return "nothing"


class _Error:
    def __repr__(self) -> str:
        return "probe error"


#: Nothing there: no rows, a blank output, a 404.
NOTHING: Any = _Nothing()
#: A read that observed nothing.
ERROR: Any = _Error()


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def bump(value: Any) -> Any:
    """A present value other than ``value``: what a record held before the act, say."""
    if _is_number(value):
        return value + 2
    if isinstance(value, str) and value:
        return value[:-1] + ("x" if value[-1] != "x" else "y")
    return "landed-lint-other"


def _half(before: Any, after: Any) -> Any:
    if _is_number(after):
        base = before if _is_number(before) else 0
        delta = after - base
        return base + (int(delta / 2) if isinstance(delta, int) else delta / 2)
    if isinstance(after, str):
        return after[: len(after) // 2]
    if isinstance(after, list):
        return after[: len(after) // 2]
    if isinstance(after, dict):
        return dict(list(after.items())[: len(after) // 2])
    return NOTHING


def _double(before: Any, after: Any) -> Any:
    if _is_number(after):
        base = before if _is_number(before) else 0
        return base + 2 * (after - base)
    if isinstance(after, str):
        return after + after
    if isinstance(after, list):
        return [*after, *after]
    if isinstance(after, dict):
        return {**after, **{f"{k}_again": v for k, v in after.items()}}
    return [after, after]


def _wrong(before: Any, after: Any) -> Any:
    if _is_number(after):
        return after - 1 if after - 1 != before else after + 1
    if isinstance(after, bool):
        return not after
    return bump(after)


def reading_of(kind: str, leaf: Any) -> Reading:
    """What a probe of ``kind`` returns when the system of record holds ``leaf``."""
    if kind == "record":
        if leaf is NOTHING:
            reading = Reading.of_json([])
            reading.number, reading.value = 0, []
            return reading
        reading = Reading.of_json([{"value": leaf}])
        reading.value = leaf
        reading.number = leaf if _is_number(leaf) else 1
        reading.auto_cell = _is_number(leaf)
        return reading
    if leaf is NOTHING:
        return Reading(capture=Capture.of(b""), missing=True)
    if isinstance(leaf, str):
        return Reading(capture=Capture.of(leaf.encode()))
    if _is_number(leaf):
        return Reading(capture=Capture.of(json.dumps(leaf).encode()))
    return Reading.of_json(leaf)


def _plain_regex(pattern: str) -> str:
    """Text a simple pattern matches (anchors dropped, common classes filled in)."""
    text = pattern.removeprefix("^").removesuffix("$")
    text = re.sub(r"\\d[+*]?|\[0-9\][+*]?", "1", text)
    text = re.sub(r"\\w[+*]?|\.[+*]?", "a", text)
    return re.sub(r"\\(.)", r"\1", text)


def wrapper(expect: Any) -> Callable[[Any], Any]:
    """How a leaf value sits in what the probe returns: at the expectation's path, if any."""
    path = getattr(expect, "path", None)
    if not isinstance(path, str):
        return lambda leaf: leaf
    steps = parse_path(path)

    def wrap(leaf: Any) -> Any:
        if leaf is NOTHING or leaf is ERROR:
            return leaf
        for step in reversed(steps):
            if isinstance(step, int):
                leaf = [None] * step + [leaf] if step >= 0 else [leaf]
            else:
                leaf = {step: leaf}
        return leaf

    return wrap


def candidates(expect: Any) -> list[Any]:
    """After values the act's write might leave, tried in turn for one the plan passes."""
    value: Any = getattr(expect, "value", None)
    leaves: list[Any] = []
    if _is_number(value):
        leaves += [value, value + 1, value - 1]
    elif isinstance(value, str):
        leaves += [value, _plain_regex(value)]
    elif value is not None:
        leaves.append(value)
    if value is not None:
        leaves.append([value])
    return [*leaves, "landed", 1, True]


#: The bad writes every step is tried against, in report order.
SCENARIOS = (
    "nothing landed",
    "half",
    "double",
    "already there",
    "wrong value",
    "probe error",
    "undone after the act",
)


def bad_writes(before: Any, after: Any, other: Any) -> dict[str, tuple[Any, Any]]:
    """(before, after) of each bad write, from the good write ``before`` -> ``after``.

    "already there" is the good state read before the act as well; "undone after the act" is a
    record that held ``other`` (another present state) before the act, written and set back:
    the read-back finds what the pre-read found.
    """
    pairs = (
        (before, before),
        (before, _half(before, after)),
        (before, _double(before, after)),
        (after, after),
        (before, _wrong(before, after)),
        (before, ERROR),
        (other, other),
    )
    return dict(zip(SCENARIOS, pairs, strict=True))


def shown(leaf: Any) -> str:
    """A made-up value as the report shows it (JSON, cut at 60 characters)."""
    if leaf is NOTHING or leaf is ERROR:
        return repr(leaf)
    text = json.dumps(leaf, default=str)
    return text if len(text) <= 60 else text[:60] + "..."
