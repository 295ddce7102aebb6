"""Reading JSON that may come from an agent: bounded before it is buffered, one value per key.

JSON readers disagree on an object that gives one key twice (the first wins in some, the last
in others), so a document read here that does is refused, naming the key: landed must not pick
one of two claims silently.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, BinaryIO

__all__ = [
    "DuplicateKey",
    "TooLarge",
    "duplicate_key_message",
    "loads",
    "may_repeat_keys",
    "read_at_most",
    "repeated_key_problem",
]

try:
    # The compiled prefilter (setup.py builds it on install): one pass over the bytes that
    # clears almost every text, so the exact check below runs only where a key may repeat.
    from landed.util._dupscan import may_repeat_keys
except ImportError:  # pragma: no cover - a source tree never installed: every text is checked

    def may_repeat_keys(data: bytes, /) -> bool:
        return True


class DuplicateKey(ValueError):
    """An object in the document gives ``key`` twice."""

    def __init__(self, key: str) -> None:
        super().__init__(duplicate_key_message(key))
        self.key = key


class TooLarge(ValueError):
    """The input is longer than its reader's limit; nothing past the limit was buffered."""


def duplicate_key_message(key: str) -> str:
    shown = key if len(key) <= 60 else key[:57] + "..."
    return (
        f"the key {shown!r} appears twice in one object; JSON readers disagree on which one "
        "counts, so give it once"
    )


def _one_value_per_key(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for key, value in pairs:
        if key in found:
            raise DuplicateKey(key)
        found[key] = value
    return found


def loads(data: str | bytes) -> Any:
    """``json.loads`` that raises DuplicateKey for a key given twice in one object."""
    return json.loads(data, object_pairs_hook=_one_value_per_key)


def repeated_key_problem(data: bytes) -> str | None:
    """Why ``data`` (JSON another decoder has accepted) cannot be trusted to mean one thing, or
    None: a key given twice in one object, or nesting too deep to check. Costs one scan of the
    bytes unless a key may repeat, then reads the text the exact way."""
    if not may_repeat_keys(data):
        return None
    try:
        loads(data)
    except DuplicateKey as exc:
        return str(exc)
    except RecursionError:
        # Fail closed: a text too deep to check is not taken as checked.
        return "the JSON is nested too deeply to check for a key given twice; flatten it"
    except ValueError as exc:
        return f"the JSON cannot be read strictly ({exc}); write it as plain UTF-8 JSON"
    return None


def read_at_most(source: str | Path | BinaryIO, limit: int, what: str) -> bytes:
    """All of ``source`` (a path, or an open binary stream such as stdin), or TooLarge once it
    holds more than ``limit`` bytes: at most ``limit + 1`` bytes are read, whatever it is (a
    device such as /dev/zero, a FIFO, a file that grows)."""
    if isinstance(source, str | Path):
        with open(source, "rb") as stream:
            return read_at_most(stream, limit, what)
    data = source.read(limit + 1)
    if len(data) > limit:
        raise TooLarge(
            f"{what} is longer than {limit:,} bytes, the most landed reads; nothing was started"
        )
    return data
