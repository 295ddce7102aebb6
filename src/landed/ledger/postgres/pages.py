"""The PostgreSQL chain walk's pages: each chain's table, its order, its row as read."""

from __future__ import annotations

from landed.ledger.links import PG_TIME_SQL

__all__ = ["ORDER", "PAGE_SQL", "TABLES"]

_SHA = "pg_catalog.encode(pg_catalog.sha256(pg_catalog.convert_to(body, 'UTF8')), 'hex')"


def _t(column: str) -> str:
    return PG_TIME_SQL.format(column)


TABLES = {"receipts": "landed_receipts", "claims": "landed_claims", "events": "landed_events"}
ORDER = {"receipts": "sequence", "claims": "coalesce(chain_pos, 0)", "events": "sequence"}
#: The walk's page of a chain, as landed.ledger.sqlite.chain.PAGE_SQL (claims are ordered by
#: position: the table has no column of its own that orders them as appended). Qualified
#: functions: a table owner's own sha256() in another schema is never called.
PAGE_SQL = {
    "receipts": f"SELECT sequence, chain_pos, chain_link, body_sha256, {_SHA}, "
    f"{_t('appended_at')}, sequence, task_id, attempt, stage, verdict, owner, "
    f"{_t('settled_at')}, body_sha256",
    "claims": f"SELECT coalesce(chain_pos, 0), chain_pos, chain_link, '', '', "
    f"{_t('claimed_at')}, task_id, run_id, attempt, spec_sha256, {_t('claimed_at')}, owner, loop",
    "events": f"SELECT sequence, chain_pos, chain_link, '', '', {_t('appended_at')}, event_key, "
    f"kind, loop, {_t('at')}, {_SHA}",
}
