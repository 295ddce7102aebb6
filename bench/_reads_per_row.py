"""Where a streamed board row's time goes (bench.ledger_reads): the whole chain walk, then on
a sample of the board the read with its hash check, the row built from the body, the JSON
line, the table line and the export line, beside the full pydantic Receipt (parse and
canonical JSON) that `landed board` and `receipts export --latest` built per row before."""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable

from rich.console import Console

from landed.cli.board_rows import export_line, row_json, shown_row
from landed.cli.board_table import BoardTable
from landed.cli.ledger_trust import chain_report
from landed.ledger.base import canonical_json, parse_body
from landed.ledger.factory import open_ledger
from landed.receipts.model import Receipt

__all__ = ["per_row"]

SAMPLE = 100_000


def _us(took: float, rows: int) -> str:
    return f"{took / max(rows, 1) * 1e6:7.1f} us/row"


def _timed(name: str, rows: int, work: Callable[[], object]) -> None:
    start = time.perf_counter()
    work()
    print(f"    {name:<44} {_us(time.perf_counter() - start, rows)}", flush=True)


async def per_row(url: str) -> None:
    """Print each step's cost per row on the ledger at ``url``."""
    print("  where a row's time goes (one process, no output):", flush=True)
    async with await open_ledger(url, create=False) as ledger:
        start = time.perf_counter()
        report = await chain_report(ledger, None, 0.0)
        walked = await ledger.count()
        print(f"    {'chain walk (whole ledger)':<44} {_us(time.perf_counter() - start, walked)}")
        start, bodies = time.perf_counter(), []
        async with contextlib.aclosing(ledger.iter_board_bodies()) as pages:
            async for page in pages:
                bodies.extend(page)
                if len(bodies) >= SAMPLE:
                    break
        took = time.perf_counter() - start
        print(f"    {'board read + hash check (a page ahead)':<44} {_us(took, len(bodies))}")
    n = len(bodies)
    rows: list[dict[str, object]] = []
    _timed(
        "row from the stored body",
        n,
        lambda: rows.extend(shown_row(seq, body, report.trusts(seq)) for seq, body in bodies),
    )
    _timed("JSON line of the row", n, lambda: [row_json(row) for row in rows])
    with open(os.devnull, "w") as sink:
        table = BoardTable("bench", Console(file=sink, width=160))

        def draw() -> None:
            table.add_all(rows)
            table.finish()

        _timed("table line of the row", n, draw)
    _timed("export line (stored body)", n, lambda: [export_line(s, b, True) for s, b in bodies])
    few = bodies[: n // 10]
    receipts: list[Receipt] = []
    _timed(
        "before: pydantic Receipt from the body",
        len(few),
        lambda: receipts.extend(parse_body(body, seq) for seq, body in few),
    )
    _timed(
        "before: canonical JSON of the Receipt",
        len(few),
        lambda: [canonical_json(r) for r in receipts],
    )
