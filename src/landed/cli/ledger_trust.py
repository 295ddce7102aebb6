"""What `landed board` and `landed receipts export` need to trust the chain: options and a walk."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import orjson
import typer

from landed.ledger.audit_report import ChainReport
from landed.ledger.base import Ledger, LedgerError
from landed.ledger.chain import DEFAULT_FOREIGN_AFTER_S
from landed.ledger.links import CHAINS, MIGRATION_V2_KEY_ID
from landed.ledger.trusted import UNTRUSTED_FIELD, receipts_report
from landed.ledger.vouch import HeadDetail
from landed.signing import SigningError, TrustStore

__all__ = ["ForeignAfterOption", "TrustOption", "chain_report", "marked", "rechained_note"]

TrustOption = Annotated[
    list[Path] | None,
    typer.Option(
        "--trust",
        metavar="KEY.pub|DIR",
        help="The runner's head public key(s): rows no signed head vouches for are marked too "
        "(without it, the links alone are checked). Repeatable.",
    ),
]
ForeignAfterOption = Annotated[
    float,
    typer.Option(
        "--foreign-after",
        min=0,
        metavar="SECONDS",
        help="With --trust: a row no head vouches for, this old, is foreign.",
    ),
]
DEFAULT_FOREIGN_AFTER = DEFAULT_FOREIGN_AFTER_S


async def chain_report(
    ledger: Ledger, trust: list[Path] | None, foreign_after: float
) -> ChainReport:
    """The receipts chain walked whole: which rows a read may show as the chain proves them."""
    try:
        store = TrustStore.load(trust) if trust else None
    except SigningError as exc:
        raise LedgerError(str(exc)) from None
    return await receipts_report(ledger, store, foreign_after if store is not None else None)


def marked(line: bytes) -> bytes:
    """An exported receipt the chain does not prove, marked so that no reader takes it as one."""
    data = orjson.loads(line)
    data[UNTRUSTED_FIELD] = "untrusted"
    return orjson.dumps(data, option=orjson.OPT_SORT_KEYS)


async def rechained_note(ledger: Ledger) -> str:
    """What the v2 upgrade re-chained, for `landed ledger init` ('' when it re-chained nothing)."""
    for head in await ledger.chain_heads():
        if head.key_id == MIGRATION_V2_KEY_ID:
            done = HeadDetail.of(head).migrated
            shown = ", ".join(f"{c} 1-{done[c]}" for c in CHAINS if done.get(c))
            return (
                f"migration-v2: {shown} re-chained with v2 links at {head.signed_at}; `landed "
                "ledger verify` proves their columns from then on"
            )
    return ""
