"""Reading a claim stream line by line, bounded, with byte offsets: a file, stdin, or a file
followed as it grows (like ``tail -F``: it survives rotation and truncation), and the small
state file a restarted ``--follow`` resumes from."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Final

__all__ = ["Line", "Notice", "Offset", "Tail", "load_offset", "save_offset", "state_path_for"]

_CHUNK: Final = 64 << 10
#: A state file is a few hundred bytes; anything longer is not one of ours.
_STATE_MAX: Final = 4096


@dataclass(frozen=True)
class Offset:
    """Where a stream was read up to: the file (device, inode), the byte after the last line
    committed, and that line's number."""

    dev: int
    ino: int
    offset: int
    line: int


@dataclass(frozen=True)
class Line:
    """One line: its number in its file, where the next line starts, and its bytes (None with
    ``problem`` when it could not be read whole)."""

    number: int
    end: Offset
    data: bytes | None
    problem: str | None = None


@dataclass(frozen=True)
class Notice:
    """Something that happened to the stream itself (rotated, truncated, resumed)."""

    message: str


def state_path_for(stream: Path) -> Path:
    return stream.with_name(stream.name + ".landed-offset")


def load_offset(path: Path) -> Offset | None:
    """The committed offset, or None when there is no state file yet. A state file that cannot
    be read is an error naming the fix: starting over silently would verify nothing twice
    (workflow ids see to that) but would hide a broken setup."""
    try:
        with open(path, "rb") as f:
            raw = f.read(_STATE_MAX + 1)
    except FileNotFoundError:
        return None
    try:
        if len(raw) > _STATE_MAX:
            raise ValueError("too long")
        data = json.loads(raw)
        return Offset(int(data["dev"]), int(data["ino"]), int(data["offset"]), int(data["line"]))
    except (ValueError, KeyError, TypeError) as exc:
        raise ValueError(
            f"the state file {path} is not a landed offset ({exc}); delete it to read the "
            "stream from its start (claims already verified are not verified again)"
        ) from None


def save_offset(path: Path, offset: Offset) -> None:
    """Write the offset atomically (a crash leaves the old one or the new one, never half)."""
    tmp = path.with_name(path.name + ".tmp")
    body = json.dumps(offset.__dict__).encode()
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        os.write(fd, body)
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)


class Tail:
    """Lines of ``path`` (None: stdin), each at most ``max_line`` bytes; with ``follow`` it
    waits for more at the end, until ``idle`` seconds pass with nothing new and nothing
    ``busy`` (None: for ever)."""

    def __init__(
        self,
        path: Path | None,
        *,
        max_line: int,
        follow: bool = False,
        resume: Offset | None = None,
        poll: float = 0.1,
        idle: float | None = None,
    ) -> None:
        self._path, self._max, self._follow = path, max_line, follow
        self._resume, self._poll, self._idle = resume, poll, idle
        self._fd = -1
        self._ident = (0, 0)
        self._pos = 0  # bytes of the current file consumed into lines or the buffer
        self._line = 0
        self._buf = bytearray()
        self._skipping = False  # inside a line over the limit: its rest is dropped unbuffered
        #: Whether work started from earlier lines is still going: the idle time counts only
        #: while it is not (set by the reconcile loop), so idle means "caught up and settled".
        self.busy: Callable[[], bool] = lambda: False

    async def lines(self) -> AsyncIterator[Line | Notice]:
        notice = self._open()
        if notice is not None:
            yield notice
        try:
            quiet = 0.0
            while True:
                chunk = await self._read()
                if chunk:
                    quiet = 0.0
                    for item in self._split(chunk):
                        yield item
                    continue
                if not self._follow:
                    last = self._flush_last()
                    if last is not None:
                        yield last
                    return
                changed = self._changed()
                if changed is not None:
                    for event in changed:
                        yield event
                    continue
                if self._idle is not None and quiet >= self._idle:
                    return
                await asyncio.sleep(self._poll)
                quiet = 0.0 if self.busy() else quiet + self._poll
        finally:
            if self._fd >= 0 and self._path is not None:
                os.close(self._fd)

    # --- opening and reading -------------------------------------------------------------

    def _open(self) -> Notice | None:
        if self._path is None:
            self._fd = sys.stdin.fileno()
            return None
        self._fd = os.open(self._path, os.O_RDONLY)
        st = os.fstat(self._fd)
        self._ident = (st.st_dev, st.st_ino)
        got = self._resume
        if got is None:
            return None
        if (got.dev, got.ino) != self._ident:
            return Notice(
                f"{self._path} is another file than the one last read (rotated); "
                "reading it from its start"
            )
        if st.st_size < got.offset:
            return Notice(
                f"{self._path} is shorter ({st.st_size} bytes) than the offset last "
                f"committed ({got.offset}): it was truncated; reading it from its start"
            )
        os.lseek(self._fd, got.offset, os.SEEK_SET)
        self._pos, self._line = got.offset, got.line
        return Notice(f"resuming {self._path} at byte {got.offset} (after line {got.line})")

    async def _read(self) -> bytes:
        if self._path is None:
            # stdin may be a pipe that blocks: read it off the event loop.
            return await asyncio.to_thread(os.read, self._fd, _CHUNK)
        return os.read(self._fd, _CHUNK)

    def _changed(self) -> list[Line | Notice] | None:
        """At the end of the file: a rotation (the path names a new file) or a truncation (the
        file is shorter than what was read), as lines still to give and a notice; else None."""
        assert self._path is not None
        try:
            st = os.stat(self._path)
        except FileNotFoundError:
            return None  # moved away, its successor not created yet: keep waiting
        if (st.st_dev, st.st_ino) != self._ident:
            out: list[Line | Notice] = []
            # Lines written to the old file just before it moved are still read from it.
            while chunk := os.read(self._fd, _CHUNK):
                out.extend(self._split(chunk))
            last = self._flush_last()
            if last is not None:
                out.append(last)
            os.close(self._fd)
            self._fd = os.open(self._path, os.O_RDONLY)
            cur = os.fstat(self._fd)
            self._ident, self._pos, self._line = (cur.st_dev, cur.st_ino), 0, 0
            out.append(Notice(f"{self._path} was rotated; following the new file from its start"))
            return out
        if st.st_size < self._pos:
            lost = len(self._buf)
            os.lseek(self._fd, 0, os.SEEK_SET)
            self._pos, self._line = 0, 0
            self._buf.clear()
            self._skipping = False
            what = f"; the {lost}-byte line being written was lost" if lost else ""
            msg = f"{self._path} was truncated while followed{what}; reading it from its start"
            return [Notice(msg)]
        return None

    # --- splitting -----------------------------------------------------------------------

    def _split(self, chunk: bytes) -> list[Line]:
        out: list[Line] = []
        start = 0
        while True:
            nl = chunk.find(b"\n", start)
            if nl < 0:
                break
            piece = chunk[start:nl]
            self._pos += nl + 1 - start
            start = nl + 1
            out.append(self._complete(piece))
        rest = chunk[start:]
        self._pos += len(rest)
        if self._skipping:
            return out
        self._buf += rest
        if len(self._buf) > self._max:
            self._skipping = True
            self._buf.clear()
        return out

    def _complete(self, piece: bytes) -> Line:
        self._line += 1
        end = Offset(*self._ident, self._pos, self._line)
        if self._skipping:
            self._skipping = False
            return Line(self._line, end, None, self._too_long())
        data = bytes(self._buf) + piece if self._buf else piece
        self._buf.clear()
        if len(data) > self._max:
            return Line(self._line, end, None, self._too_long())
        return Line(self._line, end, data.removesuffix(b"\r"))

    def _flush_last(self) -> Line | None:
        """The final line of a file that ends without a newline."""
        if not self._buf and not self._skipping:
            return None
        return self._complete(b"")

    def _too_long(self) -> str:
        return (
            f"the line is longer than {self._max:,} bytes, the most landed reads as one claim; "
            "cite bulky evidence by ref instead of inlining it"
        )
