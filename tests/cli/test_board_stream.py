"""`landed board` streamed: its table is printed as the rows are read (sized from the first page,
as rich sizes a table of them), its rows are built from the stored bodies, and both print what
rich's whole table and the full pydantic Receipt printed before."""

from __future__ import annotations

import asyncio
import io
import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console
from rich.table import Table
from rich.text import Text
from typer.testing import CliRunner

from landed.cli import app
from landed.cli.board_rows import export_line, row_json, row_of, shown_row
from landed.cli.board_table import FIRST_PAGE, BoardTable
from landed.ledger.base import LedgerError, canonical_json, parse_body
from landed.ledger.factory import open_ledger
from landed.receipts.model import LandedExtension, ProofItem, Receipt

T0 = datetime(2026, 11, 7, 1, 0, 0, 123456, tzinfo=UTC)


def _receipts() -> list[Receipt]:
    """Receipts whose rows differ in every way a row can: long, wide and markup-like text, no
    landed part, a signed proof, another offset, not settled."""
    signed = ProofItem(kind="record", landed={"signature": {"sig": "x"}})
    return [
        Receipt(
            task_id="t1",
            owner="team[/]bot [bold]x",
            claimed_status="done",
            verdict="verified",
            settled_at=T0,
            proof=[signed, ProofItem(kind="x", landed={})],
            landed=LandedExtension(attempt=2, rung="verified"),
        ),
        Receipt(task_id="t2-" + "x" * 90, claimed_status="done", verdict="blocked"),
        Receipt(
            task_id="t3 a long id of words " * 4,
            owner="ünï",
            claimed_status="done",
            verdict="reversed",
            settled_at=T0.astimezone(timezone(timedelta(hours=5))),
        ),
        Receipt(
            task_id="日本語タスク",
            owner="全角",
            claimed_status="d\x1bone",
            verdict="reconciled",
            settled_at=datetime(2026, 1, 1, tzinfo=UTC),
            x_extra=[1],
        ),
    ]


def _rows(receipts: list[Receipt]) -> list[dict[str, Any]]:
    return [row_of(r) | {"chain": "untrusted" if i == 2 else "ok"} for i, r in enumerate(receipts)]


def _rich_table(title: str, rows: list[dict[str, Any]], console: Console) -> None:
    """The board's table as it was drawn before streaming: rich's Table of every row."""
    table = Table(title=Text(title), title_justify="left")
    for column in (
        "task",
        "attempt",
        "owner",
        "claimed",
        "done",
        "verdict",
        "rung",
        "settled at",
        "signed",
        "chain",
    ):
        table.add_column(
            column, overflow="fold", justify="right" if column == "attempt" else "left"
        )
    for row in rows:
        done = row["done"] and row["chain"] != "untrusted"
        table.add_row(
            Text(row["task_id"].replace("\x1b", "\\x1b")),
            str(row["attempt"]),
            Text(row["owner"] or "-"),
            Text(row["claimed_status"].replace("\x1b", "\\x1b")),
            Text("DONE", style="green") if done else Text("NOT DONE", style="yellow"),
            Text(row["verdict"] or "-"),
            Text(row["rung"] or "-"),
            row["settled_at"] or "-",
            str(row["signed_proofs"]),
            Text("UNTRUSTED", style="bold red") if row["chain"] == "untrusted" else "ok",
        )
    console.print(table)


def _console(**kwargs: Any) -> tuple[Console, io.StringIO]:
    out = io.StringIO()
    return Console(file=out, width=160, **kwargs), out


@pytest.mark.parametrize("colour", [False, True])
def test_a_board_of_one_page_prints_as_richs_whole_table(colour: bool) -> None:
    rows = _rows(_receipts())
    options = {"force_terminal": True, "color_system": "truecolor"} if colour else {}
    before, want = _console(**options)
    _rich_table("landed board: here", rows, before)
    after, got = _console(**options)
    table = BoardTable("landed board: here", after)
    table.add_all(iter(rows))
    table.finish()
    printed = got.getvalue()
    if colour:  # the same text and colours; rich may split a line's styles differently
        printed, expected = Text.from_ansi(printed).plain, Text.from_ansi(want.getvalue()).plain
        assert "\x1b[32mDONE" in got.getvalue() and "\x1b[1;31mUNTRUSTED" in got.getvalue()
    else:
        expected = want.getvalue()
    assert printed.startswith(expected)
    assert printed[len(expected) :] == "4 task(s): 2 DONE, 2 NOT DONE; 1 reversed\n" + (
        "1 row(s) UNTRUSTED: past a break in the hash chain or foreign; run `landed ledger "
        "verify --trust RUNNER_HEAD_KEY.pub`\n"
    )


def _many(n: int) -> Iterator[dict[str, Any]]:
    base = row_of(_receipts()[0]) | {"chain": "ok"}
    for i in range(n):
        yield base | {"task_id": f"task-{i:06d}", "done": i % 3 != 0}


def test_rows_are_printed_as_they_come_in_the_first_pages_columns() -> None:
    console, out = _console()
    table = BoardTable("landed board: big", console)
    rows = _many(3 * FIRST_PAGE)
    for _ in range(FIRST_PAGE):
        table.add(next(rows))
    # The first page is printed once it is whole, head first: nothing waits for the last row.
    assert out.getvalue().count("task-") == FIRST_PAGE
    table.add(next(rows) | {"task_id": "a-longer-task-id-than-any-on-the-first-page-" * 2})
    for row in rows:
        table.add(row)
    assert out.getvalue().count("task-") >= 2 * FIRST_PAGE
    table.finish()
    lines = out.getvalue().splitlines()
    body = [line for line in lines if line.startswith(("┏", "┃", "┡", "│", "└"))]
    # Every line of the table is as wide as its head, the long id folded over lines of it.
    assert {len(line) for line in body} == {len(body[0])}
    firsts = "".join(line.split("│")[1].strip() for line in body if line.startswith("│"))
    assert "a-longer-task-id-than-any-on-the-first-page-" * 2 in firsts
    assert lines[-1] == "1500 task(s): 1000 DONE, 500 NOT DONE; 0 reversed"
    # A word the first page did not show fits its column all the same.
    assert all("NOT DONE" in line or "DONE" in line for line in body[3:-1] if "task-" in line)


def test_a_row_from_the_stored_body_is_the_receipts_row() -> None:
    for receipt in [*_receipts(), Receipt(task_id="bare", claimed_status="x")]:
        body = canonical_json(receipt)
        for trusted in (True, False):
            want = row_of(parse_body(body)) | {"chain": "ok" if trusted else "untrusted"}
            got = shown_row(1, body, trusted)
            assert got == want and list(got) == list(want)
            assert row_json(got) == json.dumps(want)
        assert export_line(1, body, True) == canonical_json(parse_body(body)) == body


@pytest.mark.parametrize(
    "body",
    [
        b'{"claimed_status":"done","task_id":"t","settled_at":"2026-11-07 01:00:00"}',
        b'{"claimed_status":"done","landed":{"attempt":"2"},"task_id":"t"}',
        b'{"task_id": "t", "claimed_status": "done"}',
    ],
)
def test_a_body_not_in_landeds_form_is_read_by_the_receipt(body: bytes) -> None:
    """What pydantic reads differently (a time with a space, a number in a string, spaces) goes
    through the full Receipt: the same row and line it gave before."""
    assert shown_row(1, body, True) == row_of(parse_body(body)) | {"chain": "ok"}
    assert export_line(1, body, True) == canonical_json(parse_body(body))


@pytest.mark.parametrize(
    "body", [b'{"task_id": 1, "claimed_status": "x"}', b"[]", b'{"task_id": "t"', b"{}"]
)
def test_a_body_that_is_not_a_receipt_still_fails_closed(body: bytes) -> None:
    for trusted in (True, False):
        with pytest.raises(LedgerError, match="row 7 of the ledger"):
            shown_row(7, body, trusted)
        with pytest.raises(LedgerError, match="row 7 of the ledger"):
            export_line(7, body, trusted)


def test_the_board_command_streams_the_same_rows_as_its_json(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'l.db'}"

    async def seed() -> None:
        async with await open_ledger(url) as ledger:
            await ledger.append_many(_receipts())

    asyncio.run(seed())
    shown = CliRunner().invoke(app, ["board", "--ledger", url, "--json"])
    tasks = json.loads(shown.stdout)["tasks"]
    table = CliRunner().invoke(app, ["board", "--ledger", url])
    assert table.exit_code == 0, table.output
    assert "4 task(s): 2 DONE, 2 NOT DONE; 1 reversed" in table.stdout
    assert "team[/]bot [bold]x" in table.stdout and "d\\x1bone" in table.stdout
    assert [t["task_id"] for t in tasks] == sorted(r.task_id for r in _receipts())


def test_sqlite_reads_the_board_bodies_and_chain_windows_as_their_one_row_forms(
    tmp_path: Path,
) -> None:
    async def check() -> None:
        async with await open_ledger(f"sqlite:///{tmp_path / 'l.db'}") as ledger:
            await ledger.append_many(
                Receipt(task_id=f"w{i:04d}", claimed_status="done") for i in range(1203)
            )
            rows = [(seq, r) async for seq, r in ledger.iter_board_rows()]
            pages = [page async for page in ledger.iter_board_bodies()]
            assert [len(p) for p in pages] == [500, 500, 203]
            assert [(s, b) for p in pages for s, b in p] == [
                (s, canonical_json(r)) for s, r in rows
            ]
            chosen = [1, 2, 700, 1203]
            windows = await ledger.chain_windows(chosen)
            assert windows == {seq: await ledger.chain_window(seq) for seq in chosen}

    asyncio.run(check())
