"""Incremental raw reads for the exporter: the rows after a sequence, the claims after a cursor.

A scan hands back rows as stored (body and body_sha256 unchecked): the reader verifies each one
and counts a mismatch instead of failing the whole read. Nothing here writes or migrates. Each
backend has its own scan (landed.ledger.sqlite.scan, landed.ledger.postgres.scan), opened by
``landed.ledger.factory.open_scan``; what they share is here.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any, Protocol
from urllib.parse import urlsplit, urlunsplit

from landed.ledger.base import LedgerError
from landed.ledger.chain import ChainRow, SignedHead

__all__ = [
    "HEADS_SQL",
    "HEAD_POS_SQL",
    "MAX_SCAN_HEADS",
    "START",
    "ClaimRow",
    "EventRow",
    "LedgerScan",
    "RawRow",
    "event_rows",
    "heads_of",
    "no_claim_owner",
    "no_events_table",
    "shown",
]

#: (sequence, body, body_sha256) exactly as stored.
RawRow = tuple[int, str, str]
#: (cursor, the task's owner, its loop, the body of the attempt's receipt): owner and loop as the
#: claim stored them (the receipt's owner first), None where neither names them.
ClaimRow = tuple[tuple[str, str, str, int], str | None, str | None, str | None]
#: The claims cursor before the first claim.
START: tuple[str, str, str, int] = ("", "", "", 0)


class LedgerScan(Protocol):
    async def rows(self, after: int, also: Sequence[int], limit: int) -> list[RawRow]:
        """Rows with sequence > ``after`` (ascending, at most ``limit``) plus those in ``also``."""
        ...

    async def claims(
        self, after: tuple[str, str, str, int], before: datetime, limit: int
    ) -> list[ClaimRow]:
        """Claims past the cursor ``after`` (opaque: each backend fills in its own place),
        in the order they were stored, up to the first made at or after ``before``; each with
        its owner and loop, and the body of the same attempt's receipt when it has settled."""
        ...

    async def events(self, after: int, limit: int) -> list[EventRow]:
        """Events (landed.ledger.events) past sequence ``after``, in sequence order; none from
        a ledger of a schema before events."""
        ...

    async def chain(self, chain: str, after: int, limit: int) -> list[ChainRow]:
        """Rows of ``chain`` past the order ``after``, as the chain walk reads them."""
        ...

    async def heads(self, from_pos: int) -> list[SignedHead]:
        """Signed heads at receipts position ``from_pos`` or later (at most MAX_SCAN_HEADS)."""
        ...

    async def close(self) -> None: ...


#: Signed heads one scan reads at most (the exporter asks again from the last one's position).
MAX_SCAN_HEADS = 10_000
HEADS_SQL = "SELECT chain_pos, sequence, chain_link, key_id, signed_at, signature, detail FROM {}"


def heads_of(found: list[tuple[Any, ...]]) -> list[SignedHead]:
    out = []
    for r in found:
        link, key_id, at, signature = (str(v) for v in r[2:6])
        out.append(SignedHead(int(r[0]), int(r[1]), link, key_id, at, signature, r[6]))
    return out


#: (sequence, key, kind, loop, body) of one event row.
EventRow = tuple[int, str, str, str | None, str]


def event_rows(found: list[tuple[Any, ...]]) -> list[EventRow]:
    return [(int(r[0]), str(r[1]), str(r[2]), r[3], str(r[4])) for r in found]


def no_claim_owner(exc: LedgerError) -> bool:
    # A ledger of a schema before claims named their owner and loop (read, never migrated).
    return "no such column: c.owner" in str(exc) or "column c.owner does not" in str(exc)


def no_events_table(exc: LedgerError) -> bool:
    # An older ledger (read, never migrated, by the exporter) has no events table yet.
    return "no such table: landed_events" in str(exc) or 'landed_events" does not' in str(exc)


def shown(url: str) -> str:
    """The URL as printed: a PostgreSQL password is replaced by ***."""
    parts = urlsplit(url)
    if parts.password:
        return urlunsplit(
            parts._replace(netloc=parts.netloc.replace(f":{parts.password}@", ":***@"))
        )
    return url


#: The head position (the exporter's landed_ledger_head_position): the last receipt row's.
HEAD_POS_SQL = "SELECT coalesce(max(chain_pos), 0) FROM {}"
