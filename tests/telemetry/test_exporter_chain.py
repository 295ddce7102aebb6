"""The exporter's chain walk: resumed where the last scrape stopped, and 0 once a chain breaks."""

from __future__ import annotations

from typing import Any

import pytest
from helpers.exporter import Place, exporter_on, get, samples, total
from helpers.scorecard import settled

from landed.ledger.base import Ledger
from landed.ledger.chain import ChainRow
from landed.ledger.scan import LedgerScan

pytestmark = pytest.mark.slow


class _Counting:
    """The exporter's scan, counting the chain rows it hands back."""

    def __init__(self, scan: LedgerScan) -> None:
        self.scan = scan
        self.chain_rows = 0

    async def chain(self, chain: str, after: int, limit: int) -> list[ChainRow]:
        found = await self.scan.chain(chain, after, limit)
        self.chain_rows += len(found)
        return found

    def __getattr__(self, name: str) -> Any:
        return getattr(self.scan, name)


async def test_a_scrape_walks_only_the_rows_appended_since(place: Place, ledger: Ledger) -> None:
    await ledger.append_many([settled(f"c-{i}") for i in range(5)])
    exporter = exporter_on(place)
    url = await exporter.start()
    counting = _Counting(exporter.chain.scan)
    exporter.chain.scan = counting
    try:
        first = samples((await get(f"{url}metrics"))[1])
        assert counting.chain_rows == 0
        await ledger.append(settled("c-new"))
        second = samples((await get(f"{url}metrics"))[1])
    finally:
        await exporter.stop()
    assert counting.chain_rows == 1
    assert total(first, "landed_ledger_chain_ok") == total(second, "landed_ledger_chain_ok") == 1


async def test_an_edited_row_turns_chain_ok_to_0_at_the_next_scrape(
    place: Place, ledger: Ledger
) -> None:
    await ledger.append_many([settled(f"e-{i}") for i in range(3)])
    exporter = exporter_on(place)
    url = await exporter.start()
    try:
        assert total(samples((await get(f"{url}metrics"))[1]), "landed_ledger_chain_ok") == 1
        # A new row whose owner column was changed after its link was computed.
        await ledger.append(settled("e-3", owner="alice"))
        _edit_owner(place, "e-3")
        after = samples((await get(f"{url}metrics"))[1])
    finally:
        await exporter.stop()
    assert total(after, "landed_ledger_chain_ok") == 0


def _edit_owner(place: Place, task_id: str) -> None:
    import sqlite3

    import psycopg
    from psycopg import sql

    if place.path is not None:
        with sqlite3.connect(place.path) as db:
            db.execute("DROP TRIGGER landed_receipts_no_update")
            db.execute("UPDATE landed_receipts SET owner = 'mallory' WHERE task_id = ?", (task_id,))
        db.close()
        return
    table = sql.Identifier(place.schema, "landed_receipts")
    with psycopg.connect(place.admin_dsn, autocommit=True) as conn:
        conn.execute(sql.SQL("ALTER TABLE {} DISABLE TRIGGER USER").format(table))
        conn.execute(
            sql.SQL("UPDATE {} SET owner = 'mallory' WHERE task_id = %s").format(table), (task_id,)
        )
