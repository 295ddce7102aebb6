"""The SQLite ledger's reads as SQL: the latest row of a task, the board (whole, a page, by
owner, loop or time) and a loop's newest latest-rows, each in the form its index is reached by."""

from __future__ import annotations

from datetime import datetime

from landed.ledger.base import LedgerError
from landed.ledger.reads import since_text
from landed.ledger.sqlite.schema import LOOP_OF

__all__ = ["BOARD", "BOARD_PAGE", "LATEST", "LOOP_LATEST", "PAGE", "where_sql"]

#: Rows one page of a paged read holds.
PAGE = 500

LATEST = (
    "SELECT sequence, body, body_sha256 FROM landed_receipts WHERE task_id = ?"
    " ORDER BY attempt DESC, sequence DESC LIMIT 1"
)

_IS_LATEST = (
    "sequence = (SELECT sequence FROM landed_receipts WHERE task_id = r.task_id"
    " ORDER BY attempt DESC, sequence DESC LIMIT 1)"
)

BOARD = (
    "SELECT sequence, body, body_sha256 FROM landed_receipts AS r WHERE "
    + _IS_LATEST
    + " ORDER BY task_id"
)

# One page of the board, in task_id order from a task_id on (the key's index is walked).
BOARD_PAGE = (
    "SELECT sequence, body, body_sha256, task_id FROM landed_receipts AS r WHERE task_id > ?"
    f" AND {_IS_LATEST} ORDER BY task_id LIMIT ?"
)

# A loop's newest latest-rows, by the loop index (LOOP_OF, settled_at, task_id) read backwards.
LOOP_LATEST = (
    "SELECT sequence, task_id, body, body_sha256 FROM landed_receipts AS r"
    f" WHERE {LOOP_OF} = ? AND settled_at > ? AND {_IS_LATEST}"
    " ORDER BY settled_at DESC, task_id DESC LIMIT ?"
)

# A loop's settle rows after a sequence (the tripwire's stream, Ledger.loop_after). INDEXED BY:
# without it SQLite may walk the primary key from the cursor (every loop's rows).
LOOP_AFTER = (
    "SELECT sequence, task_id, body, body_sha256 FROM landed_receipts"
    " INDEXED BY landed_receipts_loop"
    f" WHERE {LOOP_OF} = ? AND settled_at > ? AND sequence > ? AND stage = 'settle'"
    " ORDER BY sequence LIMIT ?"
)


def where_sql(
    owner: str | None, loop: str | None, since: datetime | None
) -> tuple[str, list[object]]:
    """board_where's query: the loop index when a loop is given, else the owner's, else
    settled_at's (each condition in the form its index is reached by)."""
    terms: list[str] = []
    params: list[object] = []
    if loop is not None:
        terms.append(f"{LOOP_OF} = ?")
        params.append(loop)
    if owner is not None:
        terms.append("owner = ?")
        params.append(owner)
    if since is not None:
        terms.append("settled_at > ?")
        params.append(since_text(since))
    if not terms:
        raise LedgerError("board_where needs an owner, a loop or a since")
    # A since alone is read by its index: the planner would otherwise walk the whole key's
    # index to spare the sort by task_id (the index has been there since schema 1).
    hint = " INDEXED BY landed_receipts_settled_at" if loop is None and owner is None else ""
    query = (
        f"SELECT sequence, body, body_sha256 FROM landed_receipts AS r{hint} WHERE "
        + " AND ".join([*terms, _IS_LATEST])
        + " ORDER BY task_id"
    )
    return query, params
