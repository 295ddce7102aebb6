"""Reading JSON that may come from an agent: bounded before it is buffered, one value per key.

JSON readers disagree on an object that gives one key twice (the first wins in some, the last
in others), so a document read here that does is refused, naming the key: landed must not pick
one of two claims silently.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, BinaryIO

__all__ = ["DuplicateKey", "TooLarge", "duplicate_key_message", "loads", "read_at_most"]


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
