"""A small, strict JSON path: ``$.a.b[0]["c d"]``, nothing that could run code or loop."""

from __future__ import annotations

import re
from typing import Any

__all__ = ["MISSING", "JsonPathError", "parse_path", "resolve"]


class JsonPathError(ValueError):
    """The path text is not in the supported form."""


class _Missing:
    def __repr__(self) -> str:
        return "MISSING"


#: What ``resolve`` returns when the path leads nowhere (distinct from a JSON null).
MISSING: Any = _Missing()

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_\-]*")
_INDEX = re.compile(r"\[(-?\d+)\]")
_QUOTED = re.compile(r"""\[(?:"((?:[^"\\]|\\.)*)"|'((?:[^'\\]|\\.)*)')\]""")

Step = str | int


def parse_path(text: str) -> tuple[Step, ...]:
    """Parse ``$.a[0].b`` (the leading ``$`` and ``.`` are optional) into steps.

    Supported: dotted names, ``[n]`` indexes (negative counts from the end), ``["key"]`` or
    ``['key']`` for keys with other characters. Wildcards and filters are not supported, so a
    path names exactly one place or none.
    """
    pos = 0
    if text.startswith("$"):
        pos = 1
    steps: list[Step] = []
    first = True
    while pos < len(text):
        ch = text[pos]
        if ch == ".":
            match = _NAME.match(text, pos + 1)
            if match is None:
                raise JsonPathError(f"expected a name after '.' at position {pos} in {text!r}")
            steps.append(match.group(0))
            pos = match.end()
        elif ch == "[":
            index = _INDEX.match(text, pos)
            if index is not None:
                steps.append(int(index.group(1)))
                pos = index.end()
                first = False
                continue
            quoted = _QUOTED.match(text, pos)
            if quoted is None:
                raise JsonPathError(
                    f'expected [n] or ["key"] at position {pos} in {text!r}; '
                    "wildcards and filters are not supported"
                )
            raw = quoted.group(1) if quoted.group(1) is not None else quoted.group(2)
            steps.append(re.sub(r"\\(.)", r"\1", raw))
            pos = quoted.end()
        elif first and pos == 0:
            match = _NAME.match(text, pos)
            if match is None:
                raise JsonPathError(f"a path starts with $, a name or [ ; got {text!r}")
            steps.append(match.group(0))
            pos = match.end()
        else:
            raise JsonPathError(f"unexpected {ch!r} at position {pos} in {text!r}")
        first = False
    return tuple(steps)


def resolve(document: Any, steps: tuple[Step, ...]) -> Any:
    """The value at ``steps`` in ``document``, or ``MISSING`` when any step leads nowhere."""
    current = document
    for step in steps:
        if isinstance(step, int):
            if not isinstance(current, list) or not -len(current) <= step < len(current):
                return MISSING
            current = current[step]
        else:
            if not isinstance(current, dict) or step not in current:
                return MISSING
            current = current[step]
    return current
