"""Opening the outcome ledger by URL: SQLite by default, PostgreSQL for fleets.

The backends import the interface in ``base``; only this module imports the backends, so the
ledger package has no import circle.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from landed.ledger.base import DEFAULT_LEDGER_PATH, LEDGER_URL_ENV, Ledger, LedgerError

if TYPE_CHECKING:
    from landed.ledger.chain import HeadSigner

__all__ = ["default_url", "open_ledger"]


def default_url() -> str:
    return os.environ.get(LEDGER_URL_ENV) or f"sqlite:///{DEFAULT_LEDGER_PATH}"


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
    if url.startswith(("postgresql://", "postgres://")):
        from landed.ledger.postgres import PostgresLedger

        return await PostgresLedger.open(url, create=create, signer=signer)
    if "://" in url and not url.startswith("sqlite://"):
        scheme = url.split("://", 1)[0]
        raise LedgerError(
            f"unknown ledger URL scheme {scheme!r}; use sqlite:///PATH, a file path, "
            "or postgresql://USER@HOST/DB"
        )
    from landed.ledger.sqlite import SqliteLedger

    return await SqliteLedger.open(url, create=create, signer=signer)
