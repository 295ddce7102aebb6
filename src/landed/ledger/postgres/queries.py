"""The PostgreSQL ledger's reads as SQL, each in the form its index is reached by; the board
in code point order (as SQLite's): the database's own collation would order (and page) the
same board differently from one server locale to the next."""

from __future__ import annotations

from datetime import UTC, datetime

from psycopg import sql

from landed.ledger.base import LedgerError
from landed.ledger.postgres.pages import PAGE_SQL

__all__ = ["BOARD", "Queries"]

#: The whole board (the table as {t}).
BOARD = sql.SQL(
    'SELECT DISTINCT ON (task_id COLLATE "C") sequence, body, body_sha256 FROM {t}'
    ' ORDER BY task_id COLLATE "C", attempt DESC, sequence DESC'
)
_IS_LATEST = (
    "sequence = (SELECT sequence FROM {t} WHERE task_id = r.task_id"
    " ORDER BY attempt DESC, sequence DESC LIMIT 1)"
)


def _utc(at: datetime) -> datetime:
    return at if at.tzinfo is not None else at.replace(tzinfo=UTC)


class Queries:
    """One schema's queries."""

    def __init__(self, schema: str) -> None:
        self.schema = sql.Identifier(schema)
        self.table = sql.Identifier(schema, "landed_receipts")
        self.latest = sql.SQL(
            "SELECT sequence, body, body_sha256 FROM {t} WHERE task_id = %s"
            " ORDER BY attempt DESC, sequence DESC LIMIT 1"
        ).format(t=self.table)
        self.get = sql.SQL(
            "SELECT sequence, body, body_sha256 FROM {t} WHERE task_id = %s"
            " ORDER BY attempt, sequence"
        ).format(t=self.table)
        self.board = BOARD.format(t=self.table)
        self.count = sql.SQL("SELECT count(*) FROM {t}").format(t=self.table)
        self.before = sql.SQL("SELECT max(sequence) FROM {t} WHERE sequence < %s").format(
            t=self.table
        )
        # A loop's newest latest-rows: the loop index (landed_loop_of(body), settled_at,
        # task_id), read backwards.
        self.loop_latest = sql.SQL(
            "SELECT sequence, task_id, body, body_sha256 FROM {t} AS r"
            " WHERE {s}.landed_loop_of(body) = %s AND settled_at > %s"
            f" AND {_IS_LATEST} ORDER BY settled_at DESC, task_id DESC LIMIT %s"
        ).format(t=self.table, s=self.schema)
        # A loop's settle rows after a sequence (the tripwire's stream, Ledger.loop_after): the
        # same loop index from a floor on settled_at, in commit (sequence) order.
        self.loop_after = sql.SQL(
            "SELECT sequence, task_id, body, body_sha256 FROM {t}"
            " WHERE {s}.landed_loop_of(body) = %s AND settled_at > %s AND sequence > %s"
            " AND stage = 'settle' ORDER BY sequence LIMIT %s"
        ).format(t=self.table, s=self.schema)

    @property
    def windows(self) -> sql.Composed:
        """chain_windows' query: for each sequence of the array, the receipts-chain rows before
        it, of it and after it (as chain_window reads them), each tagged with the sequence."""
        return sql.SQL(
            "SELECT s.seq, w.* FROM unnest(%s::bigint[]) AS s(seq),"
            " LATERAL (SELECT max(sequence) AS before FROM {t} WHERE sequence < s.seq) AS b,"
            " LATERAL (" + PAGE_SQL["receipts"] + " FROM {t}"
            " WHERE sequence >= coalesce(b.before, s.seq) ORDER BY sequence"
            " LIMIT CASE WHEN b.before IS NULL THEN 2 ELSE 3 END) AS w"
            " ORDER BY 1, 2"
        ).format(t=self.table)

    def where(
        self, owner: str | None, loop: str | None, since: datetime | None
    ) -> tuple[sql.Composed, list[object]]:
        """board_where's query and its parameters."""
        terms: list[sql.Composable] = []
        params: list[object] = []
        if loop is not None:
            terms.append(sql.SQL("{s}.landed_loop_of(body) = %s").format(s=self.schema))
            params.append(loop)
        if owner is not None:
            terms.append(sql.SQL("owner = %s"))
            params.append(owner)
        if since is not None:
            terms.append(sql.SQL("settled_at > %s"))
            params.append(_utc(since))
        if not terms:
            raise LedgerError("board_where needs an owner, a loop or a since")
        latest = sql.SQL(_IS_LATEST).format(t=self.table)
        query = sql.SQL(
            "SELECT sequence, body, body_sha256 FROM {t} AS r WHERE {w}"
            ' ORDER BY task_id COLLATE "C"'
        ).format(t=self.table, w=sql.SQL(" AND ").join([*terms, latest]))
        return query, params

    @staticmethod
    def since(since: datetime | None) -> datetime:
        """loop_latest's lower bound: the start of time when none is given."""
        return _utc(since if since is not None else datetime.min.replace(tzinfo=UTC))
