"""Streaming JSONL intake: receipts and loose logs in, one record or one invalid-line report out."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime
from typing import IO, Any, Final

import msgspec
from pydantic import BaseModel, ConfigDict, ValidationError

from landed._receipt import Receipt

__all__ = [
    "MAX_LINE_BYTES",
    "FastReceipt",
    "InvalidLine",
    "decode_line",
    "decode_receipt",
    "normalize_loose",
    "read_lines",
    "read_receipts",
]

#: The longest line landed reads as one receipt. A longer one is reported invalid and skipped
#: without ever being held in memory whole.
MAX_LINE_BYTES: Final = 1 << 20

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
    """Yield ``(line number, bytes)`` for each line, or an InvalidLine for one longer than
    ``max_line_bytes``, whose rest is skipped in bounded chunks. Strips a UTF-8 byte-order mark."""
    readline = stream.readline
    number = 0
    while True:
        data = readline(max_line_bytes + 1)
        if not data:
            return
        number += 1
        if number == 1:
            if data.startswith(_BOM):
                data = data[len(_BOM) :]
            elif data.startswith(_UTF16_BOMS):
                yield number, InvalidLine(line=number, reason=_UTF16)
                return
        if len(data) > max_line_bytes and not data.endswith(b"\n"):
            while data and not data.endswith(b"\n"):
                data = readline(1 << 20)
            yield number, InvalidLine(line=number, reason=_too_long(max_line_bytes))
            continue
        yield number, data


_UTF16 = (
    "the input starts with a UTF-16 byte-order mark; landed reads UTF-8 JSONL: "
    "re-encode the file as UTF-8"
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
    keys stay in the record as unknown fields; a present canonical field always wins."""
    out = record
    if "claimed_status" not in record:
        for alias in ("status", "state"):
            if alias in record:
                out = {**record, "claimed_status": record[alias]}
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
# pydantic reads). Anything else (loose logs, lax types, errors) goes to
# decode_receipt, which gives the reference answer. tests/test_intake.py checks the two agree.

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


_FAST: Final = msgspec.json.Decoder(FastReceipt)


def decode_line(line: int, data: bytes) -> FastReceipt | Receipt | InvalidLine | None:
    """Decode one line for the checker: the fast struct when the line is a plain, well-typed
    receipt, else exactly what ``decode_receipt`` says."""
    # "class_" would reach pydantic's populate_by_name alias; let the model judge it.
    if b'"class_"' not in data:
        try:
            fast = _FAST.decode(data)
        except (msgspec.DecodeError, msgspec.ValidationError, RecursionError):
            pass
        else:
            if fast.task_id != _ABSENT and fast.claimed_status != _ABSENT:
                return fast
    return decode_receipt(line, data)
