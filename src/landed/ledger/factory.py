"""Choosing the ledger's backend by URL: SQLite by default, PostgreSQL for fleets.

This module alone imports the backends (``landed.ledger.sqlite``, ``landed.ledger.postgres``;
`make layers` holds it): everything else opens a ledger, its exporter scan, its head positions
or its schema version through here, so one URL reads the same everywhere. Each backend is
imported when a URL names it, so a SQLite user never loads the PostgreSQL driver's code paths.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from landed.ledger.base import DEFAULT_LEDGER_PATH, LEDGER_URL_ENV, Ledger, LedgerError

if TYPE_CHECKING:
    from landed.ledger.chain import HeadSigner, SignedHead
    from landed.ledger.scan import LedgerScan

__all__ = [
    "backend_of",
    "default_url",
    "file_of",
    "open_ledger",
    "open_scan",
    "read_heads",
    "schema_at",
]


def default_url() -> str:
    return os.environ.get(LEDGER_URL_ENV) or f"sqlite:///{DEFAULT_LEDGER_PATH}"


def backend_of(url: str) -> Literal["sqlite", "postgres"]:
    """The backend a ledger URL names; an unknown scheme is refused."""
    if url.startswith(("postgresql://", "postgres://")):
        return "postgres"
    if "://" in url and not url.startswith("sqlite://"):
        scheme = url.split("://", 1)[0]
        raise LedgerError(
            f"unknown ledger URL scheme {scheme!r}; use sqlite:///PATH, a file path, "
            "or postgresql://USER@HOST/DB"
        )
    return "sqlite"


async def open_ledger(
    url: str | None = None, *, create: bool = True, signer: HeadSigner | None = None
) -> Ledger:
    """Open the ledger at ``url`` (default: $LANDED_LEDGER_URL, else ``.landed/ledger.db``).

    ``sqlite:///relative.db``, ``sqlite:////absolute.db`` or a bare path open a SQLite file;
    ``postgresql://...`` opens PostgreSQL (``?schema=NAME&writer_role=ROLE`` are read by landed).
    With ``create=False`` nothing is created or migrated: a missing ledger is LedgerNotFound.
    ``signer`` is the runner's head-signing key and schedule (landed.ledger.chain): the
    chain head is signed into ``landed_chain_heads`` as receipts are appended, and on close.
    Open once per process and share it; close it when done.
    """
    url = url or default_url()
    if backend_of(url) == "postgres":
        from landed.ledger.postgres.ledger import PostgresLedger

        return await PostgresLedger.open(url, create=create, signer=signer)
    from landed.ledger.sqlite.ledger import SqliteLedger

    return await SqliteLedger.open(url, create=create, signer=signer)


def open_scan(url: str) -> LedgerScan:
    """The exporter's scan of the ledger at ``url`` (landed.ledger.scan); it connects on first
    use and again after a failure."""
    if backend_of(url) == "postgres":
        from landed.ledger.postgres.scan import PgScan

        return PgScan(url)
    from landed.ledger.sqlite.scan import SqliteScan
    from landed.ledger.sqlite.url import sqlite_path

    path, _ = sqlite_path(url)
    return SqliteScan(str(path))


def file_of(url: str) -> Path | None:
    """The file of a SQLite ledger (None: a PostgreSQL one), for what is kept beside it."""
    if backend_of(url) == "postgres":
        return None
    from landed.ledger.sqlite.url import sqlite_path

    return sqlite_path(url)[0]


async def read_heads(url: str, limit: int) -> tuple[int, list[SignedHead]]:
    """The chain's head position (its last receipt row; 0: none) and the ``limit`` latest
    signed heads, highest position first: a fresh read each time, so a ledger put back to an
    earlier copy shows at once (the exporter's resumed walk would not see it)."""
    if backend_of(url) == "postgres":
        from landed.ledger.postgres.scan import read_heads as pg_heads

        return await pg_heads(url, limit)
    from landed.ledger.sqlite.scan import read_heads as sqlite_heads

    return await sqlite_heads(url, limit)


async def schema_at(url: str) -> tuple[int, int, str]:
    """The schema version the ledger at ``url`` holds (0: no schema), the one this landed
    needs, and where it is (shown without secrets); nothing is created or changed."""
    if backend_of(url) == "postgres":
        from landed.ledger.postgres.connect import schema_at as pg_schema_at

        return await pg_schema_at(url)
    from landed.ledger.sqlite.connect import schema_at as sqlite_schema_at

    return sqlite_schema_at(url)


async def clock_offset(url: str) -> tuple[float, float] | None:
    """How far the ledger server's clock is ahead of this machine's (seconds), and within how
    much; None for SQLite, a file on this machine, whose clock is this machine's."""
    if backend_of(url) == "postgres":
        from landed.ledger.postgres.connect import clock_offset as pg_clock_offset

        return await pg_clock_offset(url)
    return None
