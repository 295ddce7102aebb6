"""Streaming JSONL intake: receipts and loose logs in, one record or one invalid-line report out."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from datetime import datetime
from typing import IO, Any, Final, Protocol

import msgspec
from pydantic import BaseModel, ConfigDict, ValidationError

from landed.receipts.model import Receipt
from landed.util.strictjson import may_repeat_keys, repeated_key_problem

__all__ = [
    "MAX_LINE_BYTES",
    "MAX_SKIP_BYTES",
    "ByteSource",
    "FastReceipt",
    "InvalidLine",
    "decode_line",
    "decode_receipt",
    "normalize_loose",
    "read_batches",
    "read_lines",
    "read_receipts",
    "settle_fast",
]

#: The longest line landed reads as one receipt. A longer one is reported invalid and skipped
#: without ever being held in memory whole.
MAX_LINE_BYTES: Final = 1 << 20
#: After a line over its limit, how far landed reads looking for its end before it stops
#: reading the input altogether (a stream that sends no newline is not JSONL).
MAX_SKIP_BYTES: Final = 256 << 20

_BOM: Final = b"\xef\xbb\xbf"
_UTF16_BOMS: Final = (b"\xff\xfe", b"\xfe\xff")


class InvalidLine(BaseModel):
    """A line that is not a receipt: where it is and what is wrong with it."""

    model_config = ConfigDict(frozen=True)

    line: int
    reason: str


# --- lines -------------------------------------------------------------------------------------


def read_lines(
    stream: IO[bytes], *, max_line_bytes: int = MAX_LINE_BYTES
) -> Iterator[tuple[int, bytes | InvalidLine]]:
    """Yield ``(line number, bytes)`` for each line (without its newline), or an InvalidLine for
    one longer than ``max_line_bytes``, whose rest is skipped in bounded chunks. Strips a UTF-8
    byte-order mark."""
    number = 0
    for batch in read_batches(stream, max_line_bytes=max_line_bytes):
        for data in batch:
            number += 1
            yield number, data


#: How much ``read_batches`` reads at once: large enough that splitting runs in C over many lines,
#: small enough to keep memory flat on a file of any size.
_READ_CHUNK_BYTES: Final = 1 << 20


class ByteSource(Protocol):
    """Anything with ``read(size)``: a binary file, or one part of one (``FilePart``)."""

    def read(self, size: int = -1, /) -> bytes: ...


def read_batches(
    stream: ByteSource,
    *,
    max_line_bytes: int = MAX_LINE_BYTES,
    chunk_bytes: int = _READ_CHUNK_BYTES,
    at_start: bool = True,
) -> Iterator[Sequence[bytes | InvalidLine]]:
    """The lines of ``stream`` in batches, in order, one item per line (numbered from 1 across
    batches): the line's bytes without its newline, or an InvalidLine for a line longer than
    ``max_line_bytes``, whose rest is skipped without being held whole. A UTF-8 byte-order mark
    is stripped; a UTF-16 one makes the whole input one InvalidLine (only ``at_start``: False
    reads a later part of a file, from a line boundary, numbering its lines from 1).

    The file is read in large blocks and split in C: reading line by line costs more than
    decoding a receipt."""
    read = stream.read
    block = read(chunk_bytes)
    # A pipe may hand over fewer bytes than a byte-order mark at first.
    while at_start and block and len(block) < len(_BOM) and (more := read(chunk_bytes)):
        block += more
    if not at_start:
        pass
    elif block.startswith(_BOM):
        block = block[len(_BOM) :] or read(chunk_bytes)
    elif block.startswith(_UTF16_BOMS):
        yield [InvalidLine(line=1, reason=_UTF16)]
        return
    number = 0  # lines handed out so far
    tail = b""  # the start of a line whose newline has not been read yet
    skipping = False  # inside a line already reported as too long: drop up to its newline
    skipped = 0  # bytes of that line dropped so far
    while block:
        lines = (tail + block if tail else block).split(b"\n")
        tail = lines.pop()
        if skipping and lines:
            del lines[0]  # the end of the over-long line
            skipping = False
        elif skipping:
            skipped += len(block)
            if skipped > MAX_SKIP_BYTES:
                # No newline in sight: a device, or a stream with no line breaks. Reading on
                # would spin for ever without reporting anything.
                yield [InvalidLine(line=number + 1, reason=_no_newline(number))]
                return
        batch: Sequence[bytes | InvalidLine] = lines
        if lines and max(map(len, lines)) > max_line_bytes:
            batch = [
                InvalidLine(line=number + i, reason=_too_long(max_line_bytes))
                if len(data) > max_line_bytes
                else data
                for i, data in enumerate(lines, 1)
            ]
        if skipping:
            tail = b""
        elif len(tail) > max_line_bytes:
            over = InvalidLine(line=number + len(batch) + 1, reason=_too_long(max_line_bytes))
            batch = [*batch, over]
            tail = b""
            skipping = True
            skipped = 0
        if batch:
            number += len(batch)
            yield batch
        block = read(chunk_bytes)
    if tail:
        yield [tail]


_UTF16 = (
    "the input starts with a UTF-16 byte-order mark; landed reads UTF-8 JSONL: "
    "re-encode the file as UTF-8"
)


def _no_newline(line: int) -> str:
    return (
        f"no newline came within {MAX_SKIP_BYTES:,} bytes after line {line}, which was too "
        "long: this is not JSONL (a device, or a stream without line breaks), so landed stopped "
        "reading it; give it a file of one receipt per line"
    )


def _too_long(limit: int) -> str:
    return (
        f"the line is longer than {limit:,} bytes, the most landed reads as one receipt; "
        "shorten its report or move bulky evidence into a file and cite it by ref"
    )


# --- the full path: pydantic -------------------------------------------------------------------

_ANY_JSON: Final = msgspec.json.Decoder()


def normalize_loose(record: dict[str, Any], line: int) -> dict[str, Any]:
    """Map a loose log onto the receipt: ``status``/``state`` -> ``claimed_status``, ``id`` ->
    ``task_id`` (an integer id becomes its decimal text), and a missing id -> ``line-N``. The alias
    keys stay in the record as unknown fields; a present canonical field wins, except an empty or
    blank ``claimed_status``, which says nothing and so must not hide a ``status: done``."""
    out = record
    claimed = record.get("claimed_status")
    absent = "claimed_status" not in record
    if absent or (isinstance(claimed, str) and (not claimed or claimed.isspace())):
        for alias in ("status", "state"):
            if alias in record:
                value = record[alias]
                if not absent and isinstance(value, str) and (not value or value.isspace()):
                    continue
                out = {**record, "claimed_status": value}
                break
    task_id = out.get("task_id")
    if task_id is None:
        task_id = out.get("id")
        task_id = f"line-{line}" if task_id is None else task_id
    if isinstance(task_id, int) and not isinstance(task_id, bool):
        task_id = str(task_id)
    if task_id is not out.get("task_id"):
        out = {**out, "task_id": task_id}
    return out


def decode_receipt(line: int, data: bytes) -> Receipt | InvalidLine | None:
    """Decode one line through the pydantic model: a Receipt, an InvalidLine, or None for a blank
    line. This is the reference reading; ``decode_line`` must agree with it on every input."""
    if not data.strip():
        return None
    try:
        value = _ANY_JSON.decode(data)
    except (msgspec.DecodeError, msgspec.ValidationError) as exc:
        return InvalidLine(line=line, reason=f"not valid JSON ({exc}); {_ONE_OBJECT}")
    except RecursionError:
        return InvalidLine(line=line, reason=f"JSON nested too deeply to read; {_ONE_OBJECT}")
    if not isinstance(value, dict):
        kind = _JSON_KINDS.get(type(value), type(value).__name__)
        return InvalidLine(
            line=line, reason=f"a JSON {kind} where a receipt belongs; {_ONE_OBJECT}"
        )
    # msgspec keeps the last of two equal keys; another reader may keep the first. A receipt
    # that says two things must not be graded on one of them.
    problem = repeated_key_problem(data)
    if problem is not None:
        return InvalidLine(line=line, reason=problem)
    try:
        return Receipt.model_validate(normalize_loose(value, line))
    except ValidationError as exc:
        return InvalidLine(line=line, reason=_explain(exc))
    except RecursionError:
        return InvalidLine(line=line, reason=f"JSON nested too deeply to read; {_ONE_OBJECT}")


_ONE_OBJECT = "each line must hold one JSON object (a receipt or a loose log record)"
_JSON_KINDS = {list: "array", str: "string", int: "number", float: "number", bool: "boolean"}
_JSON_KINDS[type(None)] = "null"


def _explain(exc: ValidationError) -> str:
    errors = exc.errors(include_url=False, include_input=False, include_context=False)
    first = errors[0]
    field = ".".join(str(part) for part in first["loc"]) or "the record"
    if first["type"] == "missing" and first["loc"] == ("claimed_status",):
        text = "no claimed_status (nor status or state): every record must say what it claims"
    else:
        text = f"{field}: {first['msg']}"
    more = len(errors) - 1
    if more:
        text += f" (and {more} more problem{'s' if more > 1 else ''})"
    return f"{text}; fix the field to match the DoD v1.0 receipt (landed schema receipt)"


def read_receipts(
    stream: IO[bytes], *, max_line_bytes: int = MAX_LINE_BYTES
) -> Iterator[Receipt | InvalidLine]:
    """Stream receipts from JSONL as pydantic models, with an InvalidLine for each bad line and one
    for input that holds no record at all (line 0)."""
    seen = False
    for number, data in read_lines(stream, max_line_bytes=max_line_bytes):
        record = data if isinstance(data, InvalidLine) else decode_receipt(number, data)
        if record is not None:
            seen = True
            yield record
    if not seen:
        yield EMPTY_INPUT


EMPTY_INPUT: Final = InvalidLine(
    line=0,
    reason="the input holds no receipts (it is empty or blank); give it one JSON receipt per line",
)


# --- the fast path: msgspec, then the same grading ----------------------------------------------
# These structs mirror Receipt's known fields with types no wider than pydantic accepts, so a line
# they accept is one the model accepts too (msgspec's RFC 3339 datetimes are a subset of what
# pydantic reads); loose logs get normalize_loose's mapping in place (settle_fast). Anything else
# (lax types, odd aliases, errors) goes to decode_receipt, which gives the reference answer.
# tests/test_intake.py checks the two agree.

_ABSENT: Final = "\x00landed:absent\x00"
# gc=False: decoded JSON cannot hold a reference cycle, so the cyclic collector need not track
# (and keep scanning) millions of short-lived structs.


class FastProof(msgspec.Struct, gc=False):
    kind: str
    ref: str | None = None
    expect: Any = None
    checked_by: str | None = None
    checked_at: datetime | None = None
    result: str | None = None
    landed: dict[str, Any] | None = None


class FastApproval(msgspec.Struct, gc=False):
    required: bool = False
    approved_by: str | None = None
    approved_at: datetime | None = None


class FastOutcome(msgspec.Struct, gc=False):
    class_: str | None = msgspec.field(default=None, name="class")
    ref: str | None = None
    verified: bool = False


class FastCost(msgspec.Struct, gc=False):
    input_tokens: int | None = None
    output_tokens: int | None = None
    usd: float | None = None


class FastLanded(msgspec.Struct, gc=False):
    attempt: int = 1
    rung: str | None = None
    revenue_usd: float | None = None
    key_id: str | None = None
    loop: str | None = None
    # Not a field of LandedExtension (an extra key there, of any type): read so a ledger row is
    # counted once per task (landed.receipts.latest).
    lifecycle: Any = None


class FastReceipt(msgspec.Struct, gc=False):
    """A receipt decoded without pydantic, for the checker's throughput. Same field names."""

    task_id: str = _ABSENT
    claimed_status: str = _ABSENT
    dod: str = "1.0"
    owner: str | None = None
    outcome: str | None = None
    target: str | None = None
    report: str | None = None
    exit_code: int | None = None
    proof: list[FastProof] = []
    approval: FastApproval | None = None
    business_outcome: FastOutcome | None = None
    cost: FastCost | None = None
    verdict: str | None = None
    verdict_by: str | None = None
    settled_at: datetime | None = None
    landed: FastLanded | None = None
    # Loose-log aliases (normalize_loose): read only when the canonical field is absent.
    status: Any = _ABSENT
    state: Any = _ABSENT
    id: Any = _ABSENT


_FAST: Final = msgspec.json.Decoder(FastReceipt)
_FAST_ERRORS: Final = (msgspec.DecodeError, msgspec.ValidationError, RecursionError)


def decode_line(line: int, data: bytes) -> FastReceipt | Receipt | InvalidLine | None:
    """Decode one line for the checker: the fast struct when the line is a plain, well-typed
    receipt or loose log, else exactly what ``decode_receipt`` says."""
    try:
        fast = _FAST.decode(data)
    except _FAST_ERRORS:
        pass
    else:
        # A line where a key may repeat goes to decode_receipt, which refuses a repeated one.
        if not may_repeat_keys(data) and settle_fast(fast, line):
            return fast
    return decode_receipt(line, data)


def settle_fast(fast: FastReceipt, line: int) -> bool:
    """Apply ``normalize_loose`` to a decoded struct in place; False when the record needs the
    pydantic reading instead (a missing status, an alias value of the wrong type)."""
    claimed = fast.claimed_status
    if claimed is _ABSENT:
        claimed = fast.status
        if claimed is _ABSENT:
            claimed = fast.state
        if claimed.__class__ is not str or claimed == _ABSENT:
            return False
        fast.claimed_status = claimed
    elif claimed == _ABSENT:
        return False
    elif (not claimed or claimed.isspace()) and (
        fast.status is not _ABSENT or fast.state is not _ABSENT
    ):
        return False  # a blank status beside an alias: normalize_loose decides
    task_id = fast.task_id
    if task_id is _ABSENT:
        ident = fast.id
        if ident is _ABSENT or ident is None:
            fast.task_id = f"line-{line}"
        elif ident.__class__ is int:
            fast.task_id = str(ident)
        elif ident.__class__ is str and ident != _ABSENT:
            fast.task_id = ident
        else:
            return False
    elif task_id == _ABSENT:
        return False
    return True
