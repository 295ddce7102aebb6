"""Indexed reads whose work is bounded by what they return, not by the ledger's size.

A loop's latest receipts (a tripwire's catch-up and its read before a silence trip) are read
through an index on the loop each receipt names (schema: SQLite 11, PostgreSQL 8), newest
first, at most ``limit`` of them. Each row read is checked as every read that trusts the chain
checks it: a row whose body does not match its hash, or that lies past a break in the receipts
chain, comes back untrusted, never as a settled receipt.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from landed.ledger.base import LedgerError, LoopRow, parse_body
from landed.ledger.chain import GENESIS, ChainRow
from landed.ledger.links import link_v2
from landed.receipts.model import Receipt

if TYPE_CHECKING:
    from landed.ledger.base import Ledger
    from landed.ledger.trusted import ReadGuard

__all__ = ["LoopRow", "links_hold", "loop_rows", "since_text"]

#: At most this many rows per loop read, whatever the caller asks (CatchUp.limit's bound).
MAX_LOOP_ROWS = 1000


def since_text(since: datetime | None) -> str:
    """``since`` as SQLite stores settled_at (isoformat in UTC); '' is before every row."""
    if since is None:
        return ""
    if since.tzinfo is None:
        since = since.replace(tzinfo=UTC)
    return since.astimezone(UTC).isoformat()


async def loop_rows(
    ledger: Ledger,
    guard: ReadGuard,
    loop: str,
    found: list[tuple[int, str, str, str]],
) -> list[LoopRow]:
    """The rows an indexed loop read found ((sequence, task_id, body, body_sha256), in the
    order read), each checked against its hash and the receipts chain (``guard``'s resumable walk,
    advanced to the newest of them, within its budget: ChainWalkBehind otherwise)."""
    if not found:
        return []
    report = await guard.vouch(ledger, max(seq for seq, *_ in found))
    out = []
    for sequence, task_id, body, sha in found:
        try:
            receipt: Receipt | None = parse_body(body, sequence, sha)
        except LedgerError:
            receipt = None
        trusted = (
            receipt is not None
            and receipt.landed is not None
            and receipt.landed.loop == loop
            and report.trusts(sequence)
            and sequence <= guard.after
        )
        out.append(LoopRow(sequence, task_id, receipt, trusted))
    return out


def links_hold(window: Sequence[ChainRow], sequence: int) -> bool:
    """Whether the row ``sequence``'s own links hold, from its chain window (the row before it,
    it, the row after it; as Ledger.chain_window reads them): its body matches its hash, its
    link follows from its columns and the row before it, and the row after it links onto it.

    A bounded check for a read that shows a few rows of a large ledger: an edit of the row, or
    of its neighbours' links, is caught; a break elsewhere in the chain is not (the whole walk
    of `landed board` and `landed ledger verify` reports that).
    """
    at = next((i for i, row in enumerate(window) if row[0] == sequence), None)
    if at is None or window[at][3] != window[at][4]:
        return False
    prev_pos, prev_link = 0, GENESIS
    if at > 0:
        prev_pos, prev_link = window[at - 1][1], window[at - 1][2]
        if not isinstance(prev_pos, int) or not isinstance(prev_link, str):
            return False
    for row in window[at : at + 2]:
        pos, link = row[1], row[2]
        if not isinstance(pos, int) or pos != prev_pos + 1:
            return False
        if link_v2("receipts", pos, row[6:], prev_link) != link:
            return False
        prev_pos, prev_link = pos, link
    return True
