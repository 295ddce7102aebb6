"""The board's rows as `landed board` shows them, built from the stored receipt bodies.

A row the chain proves (its body matches its hash, and the chain's links hold over that hash) is
one landed wrote: the canonical JSON of a receipt it validated. Its row is read from the few
fields it shows, without building the whole pydantic Receipt again, which is most of the cost
of a board of a million tasks. Any field not in the exact form landed writes it, and every row
the chain does not prove, goes through the full Receipt (parse_body) as before: the same row,
or the same LedgerError naming the row.
"""

from __future__ import annotations

import re
from datetime import datetime
from json.encoder import encode_basestring_ascii
from typing import Any

import orjson

from landed.ledger.base import canonical_json, parse_body
from landed.receipts.model import Receipt, attempt_of
from landed.receipts.plain import DONE_VERDICTS, is_done

__all__ = ["export_line", "row_json", "row_of", "shown_row"]

# The forms pydantic writes a datetime in (and reads back as the same instant and offset).
_TIME = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d{1,6})?(?:Z|[+-]\d\d:\d\d)?")


def row_of(receipt: Receipt) -> dict[str, Any]:
    """The row of one receipt, as the board and its JSON show it (without "chain")."""
    ext = receipt.landed
    signed = sum(1 for p in receipt.proof if p.landed and "signature" in p.landed)
    return {
        "task_id": receipt.task_id,
        "attempt": attempt_of(receipt),
        "owner": receipt.owner,
        "claimed_status": receipt.claimed_status,
        "verdict": receipt.verdict,
        "verdict_by": receipt.verdict_by,
        "done": is_done(receipt),
        "rung": ext.rung if ext else None,
        "settled_at": receipt.settled_at.isoformat() if receipt.settled_at else None,
        "signed_proofs": signed,
    }


def shown_row(sequence: int, body: bytes, trusted: bool) -> dict[str, Any]:
    """The row of a stored body already checked against its hash (Ledger.iter_board_bodies),
    with "chain": the same dict row_of(parse_body(body)) gives, or its LedgerError."""
    row = _trusted_row(body) if trusted else None
    if row is None:
        row = row_of(parse_body(body, sequence))
    row["chain"] = "ok" if trusted else "untrusted"
    return row


def export_line(sequence: int, body: bytes, trusted: bool) -> bytes:
    """The receipt as `landed receipts export` writes it, canonical_json(parse_body(body)), for
    a body already checked against its hash. A row the chain proves is that already, as landed
    stored it: its body is written as it is once it reads as a receipt's JSON object in
    canonical form (sorted keys, no spaces); any other goes through the full Receipt."""
    if trusted and _canonical_object(body):
        return body
    return canonical_json(parse_body(body, sequence))


def _canonical_object(body: bytes) -> bool:
    """Whether the body is a receipt's object as canonical_json writes it: the fields the board
    shows in landed's form (as _trusted_row reads them), sorted keys and no spaces."""
    data = _object(body)
    return (
        data is not None
        and _fields(data) is not None
        and orjson.dumps(data, option=orjson.OPT_SORT_KEYS) == body
    )


def _object(body: bytes) -> dict[str, Any] | None:
    try:
        data = orjson.loads(body)
    except orjson.JSONDecodeError:
        return None
    return data if type(data) is dict else None


def _str_or_none(*values: object) -> bool:
    return all(v is None or type(v) is str for v in values)


def _trusted_row(body: bytes) -> dict[str, Any] | None:
    """The row read from the body's fields, or None when any of them is not in the form landed
    writes (the full Receipt then decides: the same value, or the error)."""
    data = _object(body)
    return _fields(data) if data is not None else None


def _fields(data: dict[str, Any]) -> dict[str, Any] | None:
    task_id, claimed = data.get("task_id"), data.get("claimed_status")
    owner, verdict, verdict_by = data.get("owner"), data.get("verdict"), data.get("verdict_by")
    if type(task_id) is not str or type(claimed) is not str:
        return None
    if not _str_or_none(owner, verdict, verdict_by):
        return None
    ext = data.get("landed", {})
    signed = _signed(data.get("proof", []))
    settled = _settled(data.get("settled_at"))
    if type(ext) is not dict or signed is None or settled == "":
        return None
    attempt, rung = ext.get("attempt", 1), ext.get("rung")
    if type(attempt) is not int or not _str_or_none(rung):
        return None
    return {
        "task_id": task_id,
        "attempt": attempt,
        "owner": owner,
        "claimed_status": claimed,
        "verdict": verdict,
        "verdict_by": verdict_by,
        "done": settled is not None and verdict in DONE_VERDICTS,
        "rung": rung,
        "settled_at": settled,
        "signed_proofs": signed,
    }


def _signed(proof: object) -> int | None:
    """How many proofs carry a signature; None if the list is not in landed's form."""
    if type(proof) is not list:
        return None
    signed = 0
    for item in proof:
        if type(item) is not dict:
            return None
        ext = item.get("landed")
        if ext is not None and type(ext) is not dict:
            return None
        if ext and "signature" in ext:
            signed += 1
    return signed


def _settled(value: object) -> str | None:
    """settled_at as the board shows it (isoformat); "" if not in a form pydantic writes."""
    if value is None:
        return None
    if type(value) is not str or not _TIME.fullmatch(value):
        return ""
    try:
        return datetime.fromisoformat(value).isoformat()
    except ValueError:
        return ""


#: A row as json.dumps writes it (", " and ": ", keys in the order rows are built in).
_ROW_JSON = (
    '{"task_id": %s, "attempt": %s, "owner": %s, "claimed_status": %s, "verdict": %s, '
    '"verdict_by": %s, "done": %s, "rung": %s, "settled_at": %s, "signed_proofs": %s, '
    '"chain": %s}'
)
_KEYS = (
    "task_id",
    "attempt",
    "owner",
    "claimed_status",
    "verdict",
    "verdict_by",
    "done",
    "rung",
    "settled_at",
    "signed_proofs",
    "chain",
)


def row_json(row: dict[str, Any]) -> str:
    """json.dumps(row) for a shown row, without its general encoder's cost per call: the same
    text (ASCII, with json's escapes)."""
    return _ROW_JSON % tuple(_value(row[key]) for key in _KEYS)


def _value(value: object) -> str:
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if type(value) is str:
        return encode_basestring_ascii(value)
    if type(value) is int:
        return int.__repr__(value)
    raise TypeError(f"a board row holds no {type(value).__name__}")
