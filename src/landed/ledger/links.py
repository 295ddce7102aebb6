"""Chain links, version 2: one link over every column a read selects on, for every table.

Three chains, each with its own positions (``chain_pos`` 1, 2, 3, ...) and links::

    chain_link = sha256(json(["landed.chain.v2", CHAIN, chain_pos, *FIELDS, prev]))

where CHAIN is ``receipts``, ``claims`` or ``events`` and FIELDS are that table's columns in
the order of ``FIELDS[CHAIN]``, as the backend stores them (a timestamp as its stored text on
SQLite; as UTC ``YYYY-MM-DDTHH:MM:SS.ffffff`` text on PostgreSQL); ``prev`` is the previous
row's link of the same chain (64 zeros for the first). Changing a row's task_id, attempt, stage,
verdict, owner, time or body, or a claim's run or an event's key, breaks its link. The runner's
signed heads carry the tail of every chain and the positions it wrote itself (vouched).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime

import orjson

__all__ = [
    "CHAINS",
    "FIELDS",
    "MIGRATION_V2_KEY_ID",
    "PG_TIME_SQL",
    "Ranges",
    "link_v2",
    "merge_ranges",
    "parse_time",
    "pg_time",
    "ranges_of",
]

CHAINS = ("receipts", "claims", "events")
#: The columns each chain's link covers, in link order (after the chain's name and position).
FIELDS: dict[str, tuple[str, ...]] = {
    "receipts": (
        "sequence",
        "task_id",
        "attempt",
        "stage",
        "verdict",
        "owner",
        "settled_at",
        "body_sha256",
    ),
    "claims": ("task_id", "run_id", "attempt", "spec_sha256", "claimed_at", "owner", "loop"),
    "events": ("event_key", "kind", "loop", "at", "body_sha256"),
}
#: The key id of the unsigned head row the v2 upgrade leaves: every row up to the positions it
#: names was re-chained then, not as it was appended (verify says so).
MIGRATION_V2_KEY_ID = "migration-v2"
_PURPOSE = "landed.chain.v2"

#: Positions as sorted, disjoint, inclusive [first, last] pairs.
Ranges = list[list[int]]


def link_v2(chain: str, pos: int, fields: Sequence[object], prev: str) -> str:
    """The link of one row of ``chain`` (see the module docstring)."""
    return hashlib.sha256(orjson.dumps([_PURPOSE, chain, pos, *fields, prev])).hexdigest()


def pg_time(value: datetime | None) -> str | None:
    """A timestamp as PostgreSQL's link fields carry it (UTC, microseconds, no offset)."""
    if value is None:
        return None
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    return value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")


#: The SQL that reads a timestamptz column as pg_time() writes it.
PG_TIME_SQL = "to_char({} AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.US')"


def ranges_of(positions: Iterable[int]) -> Ranges:
    """Sorted positions folded into ranges: a head of 100 appends carries one pair."""
    out: Ranges = []
    for pos in sorted(set(positions)):
        if out and out[-1][1] == pos - 1:
            out[-1][1] = pos
        else:
            out.append([pos, pos])
    return out


def merge_ranges(ranges: Iterable[Sequence[int]]) -> Ranges:
    """Ranges from many heads folded into sorted, disjoint ones."""
    out: Ranges = []
    for a, b in sorted((int(r[0]), int(r[1])) for r in ranges):
        if out and a <= out[-1][1] + 1:
            out[-1][1] = max(out[-1][1], b)
        else:
            out.append([a, b])
    return out


def parse_time(text: object) -> datetime | None:
    """A stored time read back for an age (None: no time landed writes)."""
    if isinstance(text, datetime):
        return text if text.tzinfo else text.replace(tzinfo=UTC)
    try:
        found = datetime.fromisoformat(str(text))
    except ValueError:
        return None
    return found if found.tzinfo else found.replace(tzinfo=UTC)
