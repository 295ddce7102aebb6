"""The SQLite ledger's schema: versioned steps, and the chain links of rows stored before it."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime

from landed.ledger.chain import MIGRATION_KEY_ID, ChainHead
from landed.ledger.sqlite.rechain import rechain_v2

__all__ = ["CHAIN_V2_STEP", "LOOP_OF", "MIGRATIONS", "SCHEMA_VERSION", "migrate", "schema_version"]

SCHEMA_VERSION = 11
_BACKFILL_PAGE = 5000
_CHAIN_STEP = 7
CHAIN_V2_STEP = 10

#: The loop a stored body names (NULL for a body that is not JSON, so a row no reader can parse
#: is still stored and reported, not refused by its index). A query reaches the loop index
#: only through this exact expression.
LOOP_OF = "(CASE WHEN json_valid(body) THEN json_extract(body, '$.landed.loop') END)"

# INSERT OR REPLACE (and REPLACE INTO) removes the stored row without firing the DELETE trigger
# (SQLite fires none for a replace unless recursive_triggers is on), so an insert of a stored
# (task_id, attempt) is dropped before it reaches the constraint: the stored row stays and the
# statement changes nothing (rowcount 0). IGNORE, not ABORT, because a runner of the first
# schema's code appends to the same file: its retry of a stored receipt must still read as
# "already there", never fail the settle.
_NO_REPLACE = """CREATE TRIGGER landed_receipts_no_replace BEFORE INSERT ON landed_receipts
    WHEN EXISTS (SELECT 1 FROM landed_receipts
                 WHERE task_id = NEW.task_id AND attempt = NEW.attempt)
    BEGIN SELECT RAISE(IGNORE); END"""

_NO_UPDATE = """CREATE TRIGGER landed_receipts_no_update BEFORE UPDATE ON landed_receipts
    BEGIN SELECT RAISE(ABORT, 'the landed ledger is append-only: UPDATE is not allowed');
    END"""
_NO_DELETE = """CREATE TRIGGER landed_receipts_no_delete BEFORE DELETE ON landed_receipts
    BEGIN SELECT RAISE(ABORT, 'the landed ledger is append-only: DELETE is not allowed');
    END"""
_NO_ROWID_REWRITE = """CREATE TRIGGER IF NOT EXISTS landed_receipts_no_rowid_rewrite
    BEFORE INSERT ON landed_receipts
    WHEN EXISTS (SELECT 1 FROM landed_receipts WHERE sequence = NEW.sequence)
    BEGIN SELECT RAISE(ABORT,
        'the landed ledger is append-only: a stored sequence cannot be written again');
    END"""

# Schema 6: a row's key is (task_id, attempt, stage), so a recheck's lifecycle row (confirmed,
# reversed) is appended beside the settled one. SQLite cannot change a table's UNIQUE, so the
# table is copied (sequence numbers kept) into one with the new key; DROP TABLE fires no
# trigger, and every trigger is made again on the new table.
_STAGE_KEY = [
    """CREATE TABLE landed_receipts_v6 (
        sequence INTEGER PRIMARY KEY AUTOINCREMENT,
        task_id TEXT NOT NULL,
        attempt INTEGER NOT NULL CHECK (attempt >= 1),
        stage TEXT NOT NULL DEFAULT 'settle',
        verdict TEXT,
        owner TEXT,
        settled_at TEXT,
        body_sha256 TEXT NOT NULL,
        body TEXT NOT NULL,
        appended_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
        UNIQUE (task_id, attempt, stage)
    )""",
    """INSERT INTO landed_receipts_v6 (sequence, task_id, attempt, verdict, owner, settled_at,
        body_sha256, body, appended_at) SELECT sequence, task_id, attempt, verdict, owner,
        settled_at, body_sha256, body, appended_at FROM landed_receipts ORDER BY sequence""",
    "DROP TABLE landed_receipts",
    "ALTER TABLE landed_receipts_v6 RENAME TO landed_receipts",
    "CREATE INDEX landed_receipts_verdict ON landed_receipts (verdict)",
    "CREATE INDEX landed_receipts_owner ON landed_receipts (owner)",
    "CREATE INDEX landed_receipts_settled_at ON landed_receipts (settled_at)",
    _NO_UPDATE,
    _NO_DELETE,
    """CREATE TRIGGER landed_receipts_no_replace BEFORE INSERT ON landed_receipts
    WHEN EXISTS (SELECT 1 FROM landed_receipts WHERE task_id = NEW.task_id
                 AND attempt = NEW.attempt AND stage = NEW.stage)
    BEGIN SELECT RAISE(IGNORE); END""",
    _NO_ROWID_REWRITE,
]

MIGRATIONS_HEAD_TRIGGERS = [
    """CREATE TRIGGER landed_chain_heads_no_update BEFORE UPDATE ON landed_chain_heads
       BEGIN SELECT RAISE(ABORT, 'landed chain heads are append-only: UPDATE is not allowed');
       END""",
    """CREATE TRIGGER landed_chain_heads_no_delete BEFORE DELETE ON landed_chain_heads
       BEGIN SELECT RAISE(ABORT, 'landed chain heads are append-only: DELETE is not allowed');
       END""",
]

# Each step runs once, in order, inside one transaction with its version row.
MIGRATIONS: dict[int, list[str]] = {
    1: [
        """CREATE TABLE landed_receipts (
            sequence INTEGER PRIMARY KEY AUTOINCREMENT,
            task_id TEXT NOT NULL,
            attempt INTEGER NOT NULL CHECK (attempt >= 1),
            verdict TEXT,
            owner TEXT,
            settled_at TEXT,
            body_sha256 TEXT NOT NULL,
            body TEXT NOT NULL,
            appended_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
            UNIQUE (task_id, attempt)
        )""",
        "CREATE INDEX landed_receipts_verdict ON landed_receipts (verdict)",
        "CREATE INDEX landed_receipts_owner ON landed_receipts (owner)",
        "CREATE INDEX landed_receipts_settled_at ON landed_receipts (settled_at)",
        _NO_UPDATE,
        _NO_DELETE,
    ],
    2: [_NO_REPLACE],
    # Files first written at schema 2 by 3d4e067 carry the same trigger raising ABORT, which
    # fails a stored key's re-append instead of reading as "already there".
    3: ["DROP TRIGGER IF EXISTS landed_receipts_no_replace", _NO_REPLACE],
    # Claims: which run was about to run which act attempt (see Ledger.claim).
    4: [
        """CREATE TABLE landed_claims (
            task_id TEXT NOT NULL,
            run_id TEXT NOT NULL,
            attempt INTEGER NOT NULL CHECK (attempt >= 1),
            spec_sha256 TEXT NOT NULL,
            claimed_at TEXT NOT NULL,
            PRIMARY KEY (task_id, run_id, attempt)
        )""",
        """CREATE TRIGGER landed_claims_no_update BEFORE UPDATE ON landed_claims
           BEGIN SELECT RAISE(ABORT, 'landed claims are append-only: UPDATE is not allowed');
           END""",
        """CREATE TRIGGER landed_claims_no_delete BEFORE DELETE ON landed_claims
           BEGIN SELECT RAISE(ABORT, 'landed claims are append-only: DELETE is not allowed');
           END""",
        """CREATE TRIGGER landed_claims_no_replace BEFORE INSERT ON landed_claims
           WHEN EXISTS (SELECT 1 FROM landed_claims WHERE task_id = NEW.task_id
                        AND run_id = NEW.run_id AND attempt = NEW.attempt)
           BEGIN SELECT RAISE(IGNORE); END""",
    ],
    # A REPLACE that names a stored row by its rowid (receipts: sequence) deletes that row before
    # inserting its own, and the DELETE trigger does not fire for it in a connection without
    # recursive_triggers (the sqlite3 shell's default). This trigger runs before conflict
    # resolution, so the statement aborts and the stored row stays.
    5: [
        _NO_ROWID_REWRITE,
        """CREATE TRIGGER IF NOT EXISTS landed_claims_no_rowid_rewrite
           BEFORE INSERT ON landed_claims
           WHEN EXISTS (SELECT 1 FROM landed_claims WHERE rowid = NEW.rowid)
           BEGIN SELECT RAISE(ABORT,
               'landed claims are append-only: a stored rowid cannot be written again');
           END""",
    ],
    6: _STAGE_KEY,
    # The hash chain and the runner's signed heads (landed.ledger.chain); the rows already
    # stored get their links after these statements (_chain_stored), in sequence order.
    7: [
        "ALTER TABLE landed_receipts ADD COLUMN chain_pos INTEGER",
        "ALTER TABLE landed_receipts ADD COLUMN chain_link TEXT",
        """CREATE TABLE landed_chain_heads (
            chain_pos INTEGER NOT NULL,
            sequence INTEGER NOT NULL,
            chain_link TEXT NOT NULL,
            key_id TEXT NOT NULL,
            signed_at TEXT NOT NULL,
            signature TEXT NOT NULL,
            PRIMARY KEY (key_id, chain_pos)
        )""",
        *MIGRATIONS_HEAD_TRIGGERS,
    ],
    # Events (landed.ledger.events): a tripwire's trips, append-only like receipts, keyed so a
    # retried write stores one row; on a chain of their own since step 10 (links v2).
    8: [
        """CREATE TABLE landed_events (
            sequence INTEGER PRIMARY KEY AUTOINCREMENT,
            event_key TEXT NOT NULL UNIQUE,
            kind TEXT NOT NULL,
            loop TEXT,
            at TEXT NOT NULL,
            body TEXT NOT NULL,
            appended_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
        )""",
        "CREATE INDEX landed_events_loop ON landed_events (loop, sequence)",
        """CREATE TRIGGER landed_events_no_update BEFORE UPDATE ON landed_events
           BEGIN SELECT RAISE(ABORT, 'landed events are append-only: UPDATE is not allowed');
           END""",
        """CREATE TRIGGER landed_events_no_delete BEFORE DELETE ON landed_events
           BEGIN SELECT RAISE(ABORT, 'landed events are append-only: DELETE is not allowed');
           END""",
        # As for receipts: a REPLACE of a stored key or rowid would delete the stored row
        # without firing the DELETE trigger; the first is dropped, the second refused.
        """CREATE TRIGGER landed_events_no_replace BEFORE INSERT ON landed_events
           WHEN EXISTS (SELECT 1 FROM landed_events WHERE event_key = NEW.event_key)
           BEGIN SELECT RAISE(IGNORE); END""",
        """CREATE TRIGGER landed_events_no_rowid_rewrite BEFORE INSERT ON landed_events
           WHEN EXISTS (SELECT 1 FROM landed_events WHERE sequence = NEW.sequence)
           BEGIN SELECT RAISE(ABORT,
               'landed events are append-only: a stored sequence cannot be written again');
           END""",
    ],
    # A claim names its task's owner and loop, so a task still acting is counted under them
    # (the exporter's tasks started) without waiting for its receipt; older claims have NULL.
    9: [
        "ALTER TABLE landed_claims ADD COLUMN owner TEXT",
        "ALTER TABLE landed_claims ADD COLUMN loop TEXT",
    ],
    # Links v2 (landed.ledger.links): claims and events get chains of their own, a head carries
    # every chain's tail and the positions its signer wrote (its key may sign several heads at
    # one receipts position), and every stored row is re-chained (rechain.rechain_v2).
    10: [
        "ALTER TABLE landed_claims ADD COLUMN chain_pos INTEGER",
        "ALTER TABLE landed_claims ADD COLUMN chain_link TEXT",
        "ALTER TABLE landed_events ADD COLUMN chain_pos INTEGER",
        "ALTER TABLE landed_events ADD COLUMN chain_link TEXT",
        """CREATE TABLE landed_chain_heads_v10 (
            chain_pos INTEGER NOT NULL,
            sequence INTEGER NOT NULL,
            chain_link TEXT NOT NULL,
            key_id TEXT NOT NULL,
            signed_at TEXT NOT NULL,
            signature TEXT NOT NULL,
            detail TEXT,
            PRIMARY KEY (key_id, chain_pos, signed_at)
        )""",
        """INSERT INTO landed_chain_heads_v10 (chain_pos, sequence, chain_link, key_id, signed_at,
            signature) SELECT chain_pos, sequence, chain_link, key_id, signed_at, signature
            FROM landed_chain_heads ORDER BY rowid""",
        "DROP TABLE landed_chain_heads",
        "ALTER TABLE landed_chain_heads_v10 RENAME TO landed_chain_heads",
        MIGRATIONS_HEAD_TRIGGERS[0],
        MIGRATIONS_HEAD_TRIGGERS[1],
    ],
    # The loop index (landed.ledger.reads): a tripwire's catch-up reads its loop's newest
    # settlements by it, without reading the whole board. An index on an expression of the
    # body: no column is added, no stored row is written again.
    11: [
        f"CREATE INDEX landed_receipts_loop ON landed_receipts ({LOOP_OF}, settled_at, task_id)",
    ],
}


def _chain_stored(conn: sqlite3.Connection) -> None:
    """Link the rows stored before schema 7, in sequence order, and leave a marker row saying
    so: `landed ledger verify` reports that the chain covers them only from the upgrade on."""
    conn.execute("DROP TRIGGER IF EXISTS landed_receipts_no_update")
    head, after = ChainHead(), 0
    while True:
        page = conn.execute(
            "SELECT sequence, body_sha256 FROM landed_receipts WHERE sequence > ?"
            " ORDER BY sequence LIMIT ?",
            (after, _BACKFILL_PAGE),
        ).fetchall()
        links = []
        for sequence, sha in page:
            head = head.next(int(sequence), str(sha))
            links.append((head.pos, head.link, head.sequence))
        conn.executemany(
            "UPDATE landed_receipts SET chain_pos = ?, chain_link = ? WHERE sequence = ?", links
        )
        if len(page) < _BACKFILL_PAGE:
            break
        after = int(page[-1][0])
    conn.execute(_NO_UPDATE)
    if head.pos:
        at = datetime.now(UTC).isoformat(timespec="microseconds")
        conn.execute(
            "INSERT INTO landed_chain_heads (chain_pos, sequence, chain_link, key_id, signed_at,"
            " signature) VALUES (?, ?, ?, ?, ?, '')",
            (head.pos, head.sequence, head.link, MIGRATION_KEY_ID, at),
        )


def migrate(conn: sqlite3.Connection) -> None:
    """Bring the file to SCHEMA_VERSION in one transaction; safe from several processes."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        conn.execute(
            "CREATE TABLE IF NOT EXISTS landed_schema_version (version INTEGER PRIMARY KEY,"
            " applied_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')))"
        )
        # Re-read under the write lock: another process may have migrated meanwhile.
        for step in range(schema_version(conn) + 1, SCHEMA_VERSION + 1):
            for statement in MIGRATIONS[step]:
                conn.execute(statement)
            if step == _CHAIN_STEP:
                _chain_stored(conn)
            if step == CHAIN_V2_STEP:
                rechain_v2(conn)
            conn.execute("INSERT INTO landed_schema_version (version) VALUES (?)", (step,))
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise


def schema_version(conn: sqlite3.Connection) -> int:
    try:
        row = conn.execute("SELECT max(version) FROM landed_schema_version").fetchone()
    except sqlite3.OperationalError as exc:
        if "no such table" in str(exc):  # an empty or foreign database
            return 0
        raise
    return int(row[0] or 0)
