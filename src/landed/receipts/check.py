"""The checker's pipeline: stream lines, decode, (re-read live), grade, tally. No rendering."""

from __future__ import annotations

import itertools
import os
import stat
import threading
from collections.abc import Callable, Iterator
from typing import IO, Any, NamedTuple, Protocol

from landed.receipts.grading import RawGrade, evaluate, signed_revenue, unapproved
from landed.receipts.intake import (
    _ABSENT,
    _FAST,
    _FAST_ERRORS,
    EMPTY_INPUT,
    MAX_LINE_BYTES,
    ByteSource,
    FastReceipt,
    InvalidLine,
    decode_line,
    decode_receipt,
    read_batches,
    read_lines,
    settle_fast,
)
from landed.receipts.live_options import LiveOptions
from landed.receipts.model import LandedExtension, ProofItem, Receipt
from landed.receipts.scorecard import Scorecard, ScoreTally
from landed.util.strictjson import may_repeat_keys

__all__ = [
    "ApprovalCheck",
    "FilePart",
    "Record",
    "SignatureCheck",
    "Sink",
    "check_range",
    "check_stream",
    "count_lines",
    "split_point",
]

Record = FastReceipt | Receipt
SignatureCheck = Callable[[Receipt, ProofItem], bool]
#: Why a receipt's claimed approval does not verify (None: it does, or it claims none).
ApprovalCheck = Callable[[Receipt], str | None]


class Sink(Protocol):
    """Where the pipeline hands each result, in input order."""

    def task(self, line: int, record: Record, grade: RawGrade) -> None: ...
    def invalid(self, item: InvalidLine) -> None: ...


def check_stream(
    stream: IO[bytes],
    sink: Sink,
    *,
    live: LiveOptions | None = None,
    signature_ok: SignatureCheck | None = None,
    approval_check: ApprovalCheck | None = None,
    progress: Callable[[int], None] | None = None,
    max_line_bytes: int = MAX_LINE_BYTES,
) -> Scorecard:
    """Grade every line of ``stream`` into ``sink`` and return the scorecard. With
    ``signature_ok`` every line goes through the pydantic Receipt, which the hook receives;
    ``approval_check`` (with it) holds a claimed approval to its signature."""
    tally = ScoreTally()
    if live is None and signature_ok is None:
        seen, _ = check_range(stream, sink, tally, max_line_bytes=max_line_bytes)
        if not seen:
            sink.invalid(EMPTY_INPUT)
        return tally.scorecard()
    records = _decode(stream, sink, full=signature_ok is not None, max_line_bytes=max_line_bytes)
    grade = _grader(signature_ok, approval_check)
    scored: _Tally = tally if signature_ok is None else _SignedTally(tally, signature_ok)
    if live is None:
        for line, record in records:
            graded = grade(record)
            scored.add(record, graded)
            sink.task(line, record, graded)
    else:
        import asyncio  # only --live runs an event loop: an offline check starts without it

        asyncio.run(_check_live(records, sink, scored, grade, live, progress))
    return tally.scorecard()


class _Tally(Protocol):
    def add(self, view: Record, graded: RawGrade) -> None: ...


class _SignedTally:
    """The tally under signature checks: landed.revenue_usd is not signed, so it counts only where
    a signed payment read-back observed that amount (``signed_revenue``)."""

    def __init__(self, tally: ScoreTally, check: SignatureCheck) -> None:
        self._tally, self._check = tally, check

    def add(self, view: Record, graded: RawGrade) -> None:
        extension = view.landed
        if extension is not None and extension.revenue_usd is not None:
            check = self._check
            if not isinstance(view, Receipt) or not isinstance(extension, LandedExtension):
                # Never signed: no revenue.
                return self._tally.add(_CostOnly(view.verdict, view.cost), graded)
            receipt = view
            if signed_revenue(receipt, lambda i: check(receipt, receipt.proof[i])) is None:
                unsigned = extension.model_copy(update={"revenue_usd": None})
                view = receipt.model_copy(update={"landed": unsigned})
        self._tally.add(view, graded)


class _CostOnly(NamedTuple):
    verdict: str | None
    cost: Any
    landed: None = None


def check_range(
    stream: ByteSource,
    sink: Sink,
    tally: ScoreTally,
    *,
    first_line: int = 0,
    at_start: bool = True,
    max_line_bytes: int = MAX_LINE_BYTES,
) -> tuple[bool, int]:
    """Grade offline every line of ``stream`` into ``sink`` and ``tally``: a whole input, or one
    part of a file that starts at a line boundary, after ``first_line`` lines (``at_start`` False:
    no byte-order mark handling). Returns whether any line held something, and the last line's
    number. Reports no empty input: the caller knows whether the whole input was empty."""
    # The same steps as _decode, grade, tally and sink, in one loop over batches of lines: on a
    # file of millions the per-line function calls and generator hops cost as much as grading.
    fast_decode = _FAST.decode
    may_repeat = may_repeat_keys
    add, task, invalid = tally.add, sink.task, sink.invalid
    number = first_line
    seen = False
    batches = read_batches(stream, max_line_bytes=max_line_bytes, at_start=at_start)
    for batch in batches:
        for data in batch:
            number += 1
            if isinstance(data, InvalidLine):
                seen = True
                # The reader numbers the lines of its own part; the report wants the file's.
                invalid(
                    data if data.line == number else InvalidLine(line=number, reason=data.reason)
                )
                continue
            record: Record | None = None
            try:
                fast: FastReceipt = fast_decode(data)
            except _FAST_ERRORS:
                pass
            else:
                # A line where a key may repeat goes to decode_receipt, which refuses one that
                # does (naming it): msgspec keeps the last of two keys, other readers the first.
                # A plain receipt names both fields and no loose alias (a blank status beside
                # "status": "done" must not hide it); anything else gets settle_fast.
                if may_repeat(data):
                    pass
                elif (
                    fast.claimed_status is not _ABSENT
                    and fast.task_id is not _ABSENT
                    and fast.status is _ABSENT
                    and fast.state is _ABSENT
                    and fast.claimed_status != _ABSENT
                    and fast.task_id != _ABSENT
                ) or settle_fast(fast, number):
                    record = fast
            if record is None:
                full = decode_receipt(number, data)
                if full is None:
                    continue
                if isinstance(full, InvalidLine):
                    seen = True
                    invalid(full)
                    continue
                record = full
            seen = True
            graded = evaluate(record)
            add(record, graded)
            task(number, record, graded)
    return seen, number


def _decode(
    stream: IO[bytes], sink: Sink, *, full: bool, max_line_bytes: int
) -> Iterator[tuple[int, Record]]:
    decode = decode_receipt if full else decode_line
    seen = False
    for line, data in read_lines(stream, max_line_bytes=max_line_bytes):
        record = data if isinstance(data, InvalidLine) else decode(line, data)
        if record is None:
            continue
        seen = True
        if isinstance(record, InvalidLine):
            sink.invalid(record)
        else:
            yield line, record
    if not seen:
        sink.invalid(EMPTY_INPUT)


def _grader(
    signature_ok: SignatureCheck | None, approval_check: ApprovalCheck | None = None
) -> Callable[[Record], RawGrade]:
    if signature_ok is None:
        return evaluate
    check = signature_ok

    def grade(record: Record) -> RawGrade:
        if not isinstance(record, Receipt):  # the full path yields only Receipts
            raise TypeError("signature checks need pydantic receipts")
        graded = evaluate(record, lambda index: check(record, record.proof[index]))
        why = approval_check(record) if approval_check is not None else None
        return graded if why is None else unapproved(graded, why)

    return grade


async def _check_live(
    records: Iterator[tuple[int, Record]],
    sink: Sink,
    tally: _Tally,
    grade: Callable[[Record], RawGrade],
    options: LiveOptions,
    progress: Callable[[int], None] | None,
) -> None:
    from landed.receipts.live import LiveReader, live_targets  # only --live needs HTTP

    # Batches keep memory bounded on a file of any length while requests run concurrently.
    reader = LiveReader(options)
    batch_size = max(256, options.concurrency * 16)
    try:
        while batch := list(itertools.islice(records, batch_size)):
            await reader.reread(live_targets([record for _, record in batch]), progress)
            for line, record in batch:
                graded = grade(record)
                tally.add(record, graded)
                sink.task(line, record, graded)
    finally:
        await reader.aclose()


# --- two parts of one file ------------------------------------------------------------------------


class FilePart:
    """Reads bytes ``start`` to ``end`` of an open file descriptor with ``os.pread``: the shared
    file offset is never moved, so two processes can read two parts of one file at once."""

    __slots__ = ("_end", "_fd", "_pos")

    def __init__(self, fd: int, start: int, end: int) -> None:
        self._fd, self._pos, self._end = fd, start, end

    def read(self, size: int = -1) -> bytes:
        left = self._end - self._pos
        if size < 0 or size > left:
            size = left
        if size <= 0:
            return b""
        data = os.pread(self._fd, size, self._pos)
        self._pos += len(data)
        return data


def split_point(fd: int, min_bytes: int) -> int | None:
    """Where a second process can take over a file: the start of the first line after its middle.
    None when splitting cannot pay or cannot be exact: no fork, one core, other threads running
    (a forked child must not inherit their locks), not a regular file read from its start, a
    file under ``min_bytes``, a UTF-16 byte-order mark (refused whole), no line break after the
    middle."""
    if not hasattr(os, "fork") or (os.cpu_count() or 1) < 2 or threading.active_count() > 1:
        return None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or os.lseek(fd, 0, os.SEEK_CUR) != 0:
            return None
        size = info.st_size
        if size < max(min_bytes, 2) or os.pread(fd, 2, 0) in (b"\xff\xfe", b"\xfe\xff"):
            return None
        offset = size // 2
        while offset < size:
            block = os.pread(fd, 1 << 16, offset)
            if not block:
                return None
            found = block.find(b"\n")
            if found >= 0:
                split = offset + found + 1
                return split if split < size else None
            offset += len(block)
    except OSError:
        return None
    return None


def count_lines(fd: int, end: int) -> int:
    """The number of line breaks in bytes 0 to ``end`` of ``fd``: the lines before a split."""
    part = FilePart(fd, 0, end)
    count = 0
    while block := part.read(1 << 20):
        count += block.count(b"\n")
    return count
