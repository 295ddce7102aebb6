"""A loop's settlements as a stream, on SQLite: the settle rows of its tasks appended after a
sequence (Ledger.loop_after).

The sequence is the cursor because it is commit order on both backends (each append draws its
sequence under the receipts chain's lock), so a row committed after the reader's last one
always lies past its cursor, whatever its settled_at. The read goes through the loop index
(the loop each body names, settled_at, task_id) from ``since``, a floor on settled_at that the
reader moves forward as it reads: the rows it scans are the loop's rows settled after the
floor, never the ledger's, and it returns at most ``limit`` of them, oldest first.
"""

from __future__ import annotations

import sqlite3
from datetime import datetime

from landed.ledger.reads import MAX_LOOP_ROWS, since_text
from landed.ledger.sqlite_schema import LOOP_OF

__all__ = ["Found", "sqlite_loop_after", "stream_limit"]

#: (sequence, task_id, body, body_sha256), as reads.loop_rows checks them.
Found = list[tuple[int, str, str, str]]

# INDEXED BY: without it SQLite may walk the primary key from the cursor (every loop's rows).
_SQLITE = (
    "SELECT sequence, task_id, body, body_sha256 FROM landed_receipts"
    " INDEXED BY landed_receipts_loop"
    f" WHERE {LOOP_OF} = ? AND settled_at > ? AND sequence > ? AND stage = 'settle'"
    " ORDER BY sequence LIMIT ?"
)


def stream_limit(limit: int) -> int:
    return max(1, min(limit, MAX_LOOP_ROWS))


def sqlite_loop_after(
    conn: sqlite3.Connection, loop: str, after: int, since: datetime | None, limit: int
) -> Found:
    rows = conn.execute(_SQLITE, (loop, since_text(since), after, stream_limit(limit)))
    return [(int(r[0]), str(r[1]), str(r[2]), str(r[3])) for r in rows]
