"""The documentation's runnable blocks: a fenced ``bash`` or ``python`` block after a
``<!-- run -->`` marker (``<!-- run: expect-exit=N -->`` for another exit status), and the
output it must print in a fenced block after ``<!-- output -->``, where a line ``...`` stands
for any lines and ``...`` inside a line for any text in it.

A marker in any other form is an error naming its page and line, never a block left out: a
typo must not turn a checked block into an unchecked one."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

LANGUAGES = ("bash", "python")
_RUN = re.compile(r"<!-- run(?:: expect-exit=(\d+))? -->")
_FENCE = re.compile(r"```(\w*)$")


@dataclass(frozen=True)
class Block:
    """One runnable block: where it is, what runs, and what it must do."""

    page: str
    line: int  # of the opening fence, 1-based
    language: str
    code: str
    exit: int = 0
    output: str | None = None

    @property
    def name(self) -> str:
        return f"{self.page}:{self.line}"


class MarkerError(ValueError):
    """A run or output marker that does not mark a block as this module reads it."""


def blocks(page: Path, name: str) -> list[Block]:
    """Every runnable block of ``page`` (named ``name`` in a block's id), in page order."""
    lines = page.read_text().splitlines()
    found: list[Block] = []
    i = 0
    while i < len(lines):
        text = lines[i].strip()
        if text.startswith("```"):  # an unmarked block: a marker inside it is its text
            _, _, i = _fenced(lines, i, name)
            continue
        if text.startswith("<!-- output"):
            raise MarkerError(f"{name}:{i + 1}: <!-- output --> must follow a run block")
        if not text.startswith("<!-- run"):
            i += 1
            continue
        block, i = _block(lines, i, name)
        found.append(block)
    return found


def _block(lines: list[str], at: int, name: str) -> tuple[Block, int]:
    """The run block whose marker is ``lines[at]``, and the index past it (and its output)."""
    marker = _RUN.fullmatch(lines[at].strip())
    if marker is None:
        raise MarkerError(
            f"{name}:{at + 1}: {lines[at].strip()!r} is no run marker; write <!-- run --> "
            "or <!-- run: expect-exit=N -->"
        )
    language, code, end = _fenced(lines, at + 1, name)
    if language not in LANGUAGES:
        raise MarkerError(f"{name}:{at + 2}: a run block is one of {LANGUAGES}, not {language!r}")
    after = end
    while after < len(lines) and not lines[after].strip():
        after += 1
    output = None
    if after < len(lines) and lines[after].strip() == "<!-- output -->":
        _, output, end = _fenced(lines, after + 1, name)
    exit_status = int(marker.group(1) or 0)
    return Block(name, at + 2, language, code, exit_status, output), end


def _fenced(lines: list[str], at: int, name: str) -> tuple[str, str, int]:
    """The fenced block opening at ``lines[at]``: its language, its text, the index past it."""
    opening = _FENCE.fullmatch(lines[at].strip()) if at < len(lines) else None
    if opening is None:
        raise MarkerError(f"{name}:{at + 1}: a marker must be followed at once by a ``` fence")
    for end in range(at + 1, len(lines)):
        if lines[end].strip().startswith("```"):
            return opening.group(1), "".join(f"{line}\n" for line in lines[at + 1 : end]), end + 1
    raise MarkerError(f"{name}:{at + 1}: the fenced block is never closed")


def matches(expected: str, printed: str) -> bool:
    """Whether ``printed`` is ``expected``, line by line (trailing spaces ignored), where a
    line ``...`` is any number of lines and ``...`` inside a line any text in that line."""
    pattern = "".join(_line_pattern(line) for line in expected.splitlines())
    text = "".join(f"{line.rstrip()}\n" for line in printed.splitlines())
    return re.fullmatch(pattern, text) is not None


def _line_pattern(line: str) -> str:
    line = line.rstrip()
    if line == "...":
        return r"(?:[^\n]*\n)*?"
    return "[^\n]*?".join(re.escape(part) for part in line.split("...")) + r"\n"
