"""`landed board --owner/--loop/--since` (indexed reads) and `receipts export --latest` (the
board in pages): the same output as the whole board filtered, and a row whose own chain links
do not hold is shown untrusted."""

from __future__ import annotations

import asyncio
import json
import sqlite3
from contextlib import closing
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from landed.cli import app
from landed.ledger.factory import open_ledger
from landed.receipts.model import LandedExtension, Receipt

T0 = datetime(2026, 11, 7, 1, 0, tzinfo=UTC)


def _receipt(i: int, attempt: int = 1, verdict: str = "verified") -> Receipt:
    return Receipt(
        task_id=f"t-{i:02d}",
        owner=f"owner-{i % 3}",
        claimed_status="done",
        verdict=verdict,
        settled_at=T0 + timedelta(minutes=i + 10 * (attempt - 1)),
        landed=LandedExtension(attempt=attempt, loop=f"loop-{i % 2}"),
    )


def _seed(url: str) -> None:
    async def go() -> None:
        async with await open_ledger(url) as ledger:
            await ledger.append_many([_receipt(i) for i in range(12)])
            await ledger.append(_receipt(4, attempt=2, verdict="failed"))

    asyncio.run(go())


def _board(url: str, *args: str) -> dict[str, Any]:
    result = CliRunner().invoke(app, ["board", "--ledger", url, "--json", *args])
    assert result.exit_code == 0, result.output
    return dict(json.loads(result.stdout))


def test_each_filter_shows_the_whole_boards_rows_it_selects(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'l.db'}"
    _seed(url)
    whole = _board(url)
    assert whole["count"] == 12
    since = (T0 + timedelta(minutes=6, seconds=30)).isoformat()
    for args, keep in (
        (["--loop", "loop-0"], lambda i: i % 2 == 0),
        (["--owner", "owner-1"], lambda i: i % 3 == 1),
        # t-04 settled again (attempt 2) ten minutes later: its latest row is after --since.
        (["--since", since], lambda i: i > 6 or i == 4),
        (["--loop", "loop-1", "--owner", "owner-0"], lambda i: i % 2 == 1 and i % 3 == 0),
    ):
        shown = _board(url, *args)
        expected = [t for t in whole["tasks"] if keep(int(t["task_id"][2:]))]
        assert shown["tasks"] == expected, args
        assert shown["count"] == len(expected) and shown["untrusted"] == 0
        assert set(shown) == set(whole)


def test_a_filtered_board_shows_a_row_with_a_broken_link_untrusted(tmp_path: Path) -> None:
    path = tmp_path / "l.db"
    url = f"sqlite:///{path}"
    _seed(url)
    with closing(sqlite3.connect(path)) as db, db:
        db.execute("DROP TRIGGER landed_receipts_no_update")
        db.execute("UPDATE landed_receipts SET verdict = 'verified' WHERE task_id = 't-04'")
    shown = _board(url, "--loop", "loop-0")
    chain = {t["task_id"]: t["chain"] for t in shown["tasks"]}
    assert chain["t-04"] == "untrusted" and shown["untrusted"] == 1
    assert {c for t, c in chain.items() if t != "t-04"} == {"ok"}
    table = CliRunner().invoke(app, ["board", "--ledger", url, "--loop", "loop-0"])
    assert table.exit_code == 0 and "UNTRUSTED" in table.stdout


def test_a_since_that_is_no_time_is_a_usage_error(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'l.db'}"
    _seed(url)
    result = CliRunner().invoke(app, ["board", "--ledger", url, "--since", "yesterday"])
    assert result.exit_code == 2 and "ISO 8601" in result.output


def test_export_latest_is_the_board_in_its_order(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'l.db'}"
    _seed(url)
    result = CliRunner().invoke(app, ["receipts", "export", "--ledger", url, "--latest"])
    assert result.exit_code == 0, result.output
    lines = [json.loads(x) for x in result.stdout.splitlines() if x.startswith("{")]
    whole = _board(url)
    assert [(x["task_id"], x["verdict"]) for x in lines] == [
        (t["task_id"], t["verdict"]) for t in whole["tasks"]
    ]


def test_the_streamed_board_json_is_the_object_the_board_always_printed(tmp_path: Path) -> None:
    """The whole board's JSON is streamed (its tasks spooled, each row built from its stored
    body): byte for byte the object built in memory from every row's full Receipt, with a
    reversal and an untrusted row counted."""
    from landed.cli.board_rows import row_of
    from landed.cli.ledger_trust import chain_report

    path = tmp_path / "l.db"
    url = f"sqlite:///{path}"
    _seed(url)

    async def reverse() -> None:
        async with await open_ledger(url) as ledger:
            await ledger.append(_receipt(7, attempt=2, verdict="reversed"))

    asyncio.run(reverse())
    with closing(sqlite3.connect(path)) as db, db:
        db.execute("DROP TRIGGER landed_receipts_no_update")
        db.execute("UPDATE landed_receipts SET owner = 'x' WHERE task_id = 't-10'")
    result = CliRunner().invoke(app, ["board", "--ledger", url, "--json"])
    assert result.exit_code == 0, result.output

    async def whole() -> tuple[str, list[dict[str, Any]]]:
        async with await open_ledger(url, create=False) as ledger:
            report = await chain_report(ledger, None, 0.0)
            return ledger.url, [
                row_of(r) | {"chain": "ok" if report.trusts(seq) else "untrusted"}
                for seq, r in await ledger.board_rows()
            ]

    place, rows = asyncio.run(whole())
    body = {
        "ledger": place,
        "count": len(rows),
        "reversed": 1,
        "untrusted": sum(1 for r in rows if r["chain"] == "untrusted"),
        "tasks": rows,
    }
    assert result.stdout == json.dumps(body) + "\n"
    assert body["untrusted"] >= 1 and body["count"] == 12
    empty = tmp_path / "empty.db"
    asyncio.run(_init_empty(f"sqlite:///{empty}"))
    none = CliRunner().invoke(app, ["board", "--ledger", f"sqlite:///{empty}", "--json"])
    assert json.loads(none.stdout)["tasks"] == [] and json.loads(none.stdout)["count"] == 0


async def _init_empty(url: str) -> None:
    async with await open_ledger(url):
        pass
