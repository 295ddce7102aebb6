"""The checker's pipeline: stream lines, decode, (re-read live), grade, tally. No rendering."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Callable, Iterator
from typing import IO, Protocol

from landed._grading import RawGrade, evaluate
from landed._intake import (
    EMPTY_INPUT,
    MAX_LINE_BYTES,
    FastReceipt,
    InvalidLine,
    decode_line,
    decode_receipt,
    read_lines,
)
from landed._live import LiveOptions, LiveReader, live_targets
from landed._receipt import ProofItem, Receipt
from landed._scorecard import Scorecard, ScoreTally

__all__ = ["Record", "SignatureCheck", "Sink", "check_stream"]

Record = FastReceipt | Receipt
SignatureCheck = Callable[[Receipt, ProofItem], bool]


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
    progress: Callable[[int], None] | None = None,
    max_line_bytes: int = MAX_LINE_BYTES,
) -> Scorecard:
    """Grade every line of ``stream`` into ``sink`` and return the scorecard. With
    ``signature_ok`` every line goes through the pydantic Receipt, which the hook receives."""
    tally = ScoreTally()
    records = _decode(stream, sink, full=signature_ok is not None, max_line_bytes=max_line_bytes)
    grade = _grader(signature_ok)
    if live is None:
        for line, record in records:
            graded = grade(record)
            tally.add(record, graded)
            sink.task(line, record, graded)
    else:
        asyncio.run(_check_live(records, sink, tally, grade, live, progress))
    return tally.scorecard()


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


def _grader(signature_ok: SignatureCheck | None) -> Callable[[Record], RawGrade]:
    if signature_ok is None:
        return evaluate
    check = signature_ok

    def grade(record: Record) -> RawGrade:
        if not isinstance(record, Receipt):  # the full path yields only Receipts
            raise TypeError("signature checks need pydantic receipts")
        return evaluate(record, lambda index: check(record, record.proof[index]))

    return grade


async def _check_live(
    records: Iterator[tuple[int, Record]],
    sink: Sink,
    tally: ScoreTally,
    grade: Callable[[Record], RawGrade],
    options: LiveOptions,
    progress: Callable[[int], None] | None,
) -> None:
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
