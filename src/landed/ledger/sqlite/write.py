"""What the SQLite ledger writes, on its thread, each in one write transaction: a batch of
receipts (through the shared append path, landed.ledger.append), a signed head, a claim."""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Iterator, Sequence
from datetime import datetime

from landed.ledger.append import Batch, Key
from landed.ledger.base import LedgerError, LedgerRow
from landed.ledger.chain import ChainHead, HeadSigner
from landed.ledger.links import link_v2
from landed.ledger.sqlite.chain import chain_head, sign_sync, tail
from landed.ledger.sqlite.queries import LATEST

__all__ = ["claim", "columns", "flush", "row_refused", "sign", "transaction"]

# The first eight columns are columns(row); a stored (task_id, attempt, stage) is looked up
# first, under the write lock, so an insert never meets one (see flush).
_INSERT_CHAINED = """INSERT INTO landed_receipts
    (task_id, attempt, verdict, owner, settled_at, body_sha256, body, stage, sequence,
     chain_pos, chain_link) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"""
_STORED = "SELECT body_sha256 FROM landed_receipts WHERE task_id = ? AND attempt = ? AND stage = ?"


def columns(row: LedgerRow) -> tuple[object, ...]:
    """The row's values in _INSERT_CHAINED's column order, as SQLite stores them."""
    return _columns(row, _iso(row.settled_at))


def _columns(row: LedgerRow, at: str | None) -> tuple[object, ...]:
    # The settled time is stored as the link binds it (_iso): one text, made once per row.
    return (
        row.task_id,
        row.attempt,
        row.verdict,
        row.owner,
        at,
        row.sha256,
        row.body.decode(),
        row.stage,
    )


def row_refused(exc: BaseException) -> bool:
    """An error about one row's values, not about the file (see GroupCommit)."""
    cause = exc.__cause__ if isinstance(exc, LedgerError) else exc
    # OverflowError: an attempt beyond SQLite's 64-bit integer, raised by the binding itself.
    return isinstance(cause, (sqlite3.IntegrityError, sqlite3.DataError, OverflowError))


@contextlib.contextmanager
def transaction(conn: sqlite3.Connection, begin: str = "BEGIN IMMEDIATE") -> Iterator[None]:
    """One transaction; BEGIN IMMEDIATE takes the file's write lock first, so no other process
    appends between reading a chain's tail and linking onto it."""
    conn.execute(begin)
    try:
        yield
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise


def flush(
    conn: sqlite3.Connection, rows: Sequence[LedgerRow], signer: HeadSigner | None
) -> list[bool | str]:
    with transaction(conn):
        stored: dict[Key, str] = {}
        for row in rows:
            found = conn.execute(_STORED, row.key).fetchone()
            if found is not None:
                stored[row.key] = str(found[0])
        batch = Batch(rows, stored, signer)
        if batch.new:
            head = chain_head(conn)
            batch.link(head, _sequences(conn, head, len(batch.new)), _iso)
            _insert(conn, batch)
            batch.inserted()
        if signer is not None and batch.sign_due:
            batch.signing(sign_sync(conn, signer))
    return batch.committed()


def _iso(at: datetime | None) -> str | None:
    return at.isoformat() if at is not None else None


def _sequences(conn: sqlite3.Connection, head: ChainHead, n: int) -> range:
    # AUTOINCREMENT's counter, so a sequence is never reused, not even a deleted one's.
    counter = conn.execute(
        "SELECT seq FROM sqlite_sequence WHERE name = 'landed_receipts'"
    ).fetchone()
    last = max(head.sequence, int(counter[0]) if counter else 0)
    return range(last + 1, last + 1 + n)


def _insert(conn: sqlite3.Connection, batch: Batch) -> None:
    for row, sequence, pos, link, at in batch.linked:
        values = (*_columns(row, at), sequence, pos, link)
        if conn.execute(_INSERT_CHAINED, values).rowcount != 1:
            raise LedgerError(
                f"task {row.task_id!r} attempt {row.attempt}: the insert was dropped by "
                "a trigger landed did not make; check the ledger's triggers"
            )


def sign(conn: sqlite3.Connection, signer: HeadSigner | None) -> None:
    if signer is None or signer.unsigned <= 0:
        return
    with transaction(conn):
        signed = sign_sync(conn, signer)
    if signed is None:
        signer.refused()
    else:
        signer.committed()


#: A stored receipt (sequence, body, hash) and another run's claim (run, attempt, spec, at).
Claimed = tuple[tuple[int, str, str] | None, tuple[str, int, str, str] | None]


def claim(
    conn: sqlite3.Connection,
    fields: tuple[str, str, int, str, str, str | None, str | None],
    record: bool,
    signer: HeadSigner | None,
) -> Claimed:
    """The receipt check and the claim in one transaction. ``fields``: task id, run id,
    attempt, spec hash, claimed at, owner, loop."""
    task_id, run_id = fields[0], fields[1]
    # A lookup alone needs no write lock (WAL readers never wait for the writer).
    with transaction(conn, "BEGIN IMMEDIATE" if record else "BEGIN"):
        stored = conn.execute(LATEST, (task_id,)).fetchone()
        row = None
        if stored is None and record:
            _insert_claim(conn, fields, signer)
        if stored is None:
            row = conn.execute(
                "SELECT run_id, attempt, spec_sha256, claimed_at FROM landed_claims "
                "WHERE task_id = ? AND run_id <> ? ORDER BY claimed_at, run_id LIMIT 1",
                (task_id, run_id),
            ).fetchone()
    return (
        None if stored is None else (int(stored[0]), str(stored[1]), str(stored[2])),
        None if row is None else (str(row[0]), int(row[1]), str(row[2]), str(row[3])),
    )


def _insert_claim(
    conn: sqlite3.Connection, fields: tuple[object, ...], signer: HeadSigner | None
) -> None:
    # The claims chain's tail is read under the same write lock the receipt check took.
    head = tail(conn, "claims")
    pos = head.pos + 1
    row_link = link_v2("claims", pos, fields, head.link)
    cur = conn.execute(
        "INSERT INTO landed_claims (task_id, run_id, attempt, spec_sha256, claimed_at, owner,"
        " loop, chain_pos, chain_link) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
        " ON CONFLICT (task_id, run_id, attempt) DO NOTHING",
        (*fields, pos, row_link),
    )
    if cur.rowcount == 1 and signer is not None:
        signer.wrote("claims", pos, row_link)
