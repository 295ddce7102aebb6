"""`landed board --owner/--loop/--since`: the filtered board, read through the ledger's indexes.

Its work grows with the tasks it shows, not with the ledger. Each row shown is checked by its
own chain window (landed.ledger.reads.links_hold): its body against its hash, its link against
the row before it, the row after it against its link; a row that fails is shown untrusted. A
break elsewhere in the chain is reported by the whole board and by `landed ledger verify`;
with --trust the filtered board walks the whole chain too (the signed heads are checked).
"""

from __future__ import annotations

from datetime import datetime

from landed.ledger.base import Ledger
from landed.ledger.reads import links_hold
from landed.receipts.model import Receipt

__all__ = ["filtered_rows"]


async def filtered_rows(
    ledger: Ledger, *, owner: str | None, loop: str | None, since: datetime | None
) -> list[tuple[int, Receipt, bool]]:
    """(sequence, receipt, whether its own chain links hold) of each task the filters select,
    ordered by task_id."""
    rows = await ledger.board_where(owner=owner, loop=loop, since=since)
    # Every row's window in one read: a round trip per row would grow with what is shown.
    windows = await ledger.chain_windows([seq for seq, _ in rows])
    return [(seq, receipt, links_hold(windows[seq], seq)) for seq, receipt in rows]
