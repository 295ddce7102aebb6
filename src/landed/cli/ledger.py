"""``landed board``, ``landed receipts export`` and ``landed ledger init``: the outcome ledger."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import sys
import tempfile
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Annotated, Any

import typer
from rich.console import Console

from landed.cli.board_read import filtered_rows
from landed.cli.board_rows import export_line, row_json, row_of, shown_row
from landed.cli.board_table import BoardTable
from landed.cli.ledger_trust import (
    DEFAULT_FOREIGN_AFTER,
    ForeignAfterOption,
    TrustOption,
    chain_report,
    marked,
    rechained_note,
)
from landed.cli.out import emit, fail, reader_left
from landed.cli.report_console import ReportConsole
from landed.cli.root import app
from landed.ledger.base import LedgerError, canonical_json
from landed.ledger.factory import open_ledger
from landed.receipts.model import Receipt

__all__ = ["board", "export", "init"]

EXIT_INVALID = 3

LedgerOption = Annotated[
    str | None,
    typer.Option(
        "--ledger",
        metavar="URL",
        help="sqlite:///PATH, a file path or postgresql://... "
        "(default: $LANDED_LEDGER_URL, else .landed/ledger.db).",
    ),
]

receipts_app = typer.Typer(
    help="Receipts in the outcome ledger.\n\nExit codes: 0 done; 3 the ledger could not be read.",
    no_args_is_help=True,
)
app.add_typer(receipts_app, name="receipts")
ledger_app = typer.Typer(
    help="The outcome ledger itself.\n\nExit codes: 0 done; 3 it could not be created.",
    no_args_is_help=True,
)
app.add_typer(ledger_app, name="ledger")


def _fail(message: str, *, json_error: str | None = None) -> typer.Exit:
    return fail(message, EXIT_INVALID, json_error=json_error)


async def _init(url: str | None) -> tuple[str, str]:
    async with await open_ledger(url, create=True) as ledger:
        return ledger.url, await rechained_note(ledger)


@ledger_app.command("init")
def init(
    ledger: LedgerOption = None,
    as_json: Annotated[bool, typer.Option("--json", help='One JSON object: {"ledger"}.')] = False,
) -> None:
    """Create the ledger, or bring it to landed's schema; a ledger already there is kept as is.

    On PostgreSQL, run it once as the database owner (with CREATEROLE): it creates the table,
    the trigger that rejects UPDATE, DELETE and TRUNCATE, and the INSERT-and-SELECT-only role
    the runner's login is then granted. Nothing is ever removed or rewritten.

    Exit codes: 0 the ledger is ready; 3 it could not be created (the message names why).
    """
    try:
        where, note = asyncio.run(_init(ledger))
    except LedgerError as exc:
        raise _fail(str(exc), json_error="ledger not created" if as_json else None) from None
    if as_json:
        typer.echo(json.dumps({"ledger": where} | ({"migration": note} if note else {})))
    else:
        typer.echo(f"ledger ready: {where}" + (f"\n{note}" if note else ""))


async def _board(
    url: str | None,
    trust: list[Path] | None,
    foreign_after: float,
    where: dict[str, Any],
) -> tuple[str, list[dict[str, Any]]]:
    """The filtered board's rows as shown (each with its "chain"), and where the ledger is."""
    async with await open_ledger(url, create=False) as ledger:
        if not trust:
            # An indexed read, each row checked by its own chain window.
            found = await filtered_rows(ledger, **where)
            return ledger.url, [_shown(r, holds) for _, r, holds in found]
        report = await chain_report(ledger, trust, foreign_after)
        rows = await ledger.board_where(**where)
        return ledger.url, [_shown(r, report.trusts(seq)) for seq, r in rows]


def _shown(receipt: Receipt, trusted: bool) -> dict[str, Any]:
    return row_of(receipt) | {"chain": "ok" if trusted else "untrusted"}


async def _whole_board(
    url: str | None,
    trust: list[Path] | None,
    foreign_after: float,
    started: Callable[[str], Callable[[list[dict[str, Any]]], None]],
) -> None:
    """The whole board a page at a time: ``started(where)`` once the chain is walked, then the
    function it returns with each page of rows as shown. Only a page is held at a time."""
    async with await open_ledger(url, create=False) as ledger:
        report = await chain_report(ledger, trust, foreign_after)
        take = started(ledger.url)
        async with contextlib.aclosing(ledger.iter_board_bodies()) as pages:
            async for page in pages:
                take([shown_row(seq, body, report.trusts(seq)) for seq, body in page])


def _board_json(
    url: str | None, trust: list[Path] | None, foreign_after: float, out: IO[bytes]
) -> None:
    """The whole board's JSON object, streamed: its tasks are spooled to a temporary file as
    they are read (the counts come first in the object), so memory does not grow with them.
    Nothing is written to ``out`` before the whole board was read."""
    count = reversed_ = untrusted = 0
    place = ""

    def started(where: str) -> Callable[[list[dict[str, Any]]], None]:
        nonlocal place
        place = where
        return take

    def take(rows: list[dict[str, Any]]) -> None:
        nonlocal count, reversed_, untrusted
        if not rows:
            return
        # row_json is json.dumps(row): the same bytes the board wrote row by row before.
        spool.write(((", " if count else "") + ", ".join(map(row_json, rows))).encode())
        count += len(rows)
        reversed_ += sum(row["verdict"] == "reversed" for row in rows)
        untrusted += sum(row["chain"] == "untrusted" for row in rows)

    with tempfile.TemporaryFile() as spool:
        asyncio.run(_whole_board(url, trust, foreign_after, started))
        head = {
            "ledger": place,
            "count": count,
            "reversed": reversed_,
            "untrusted": untrusted,
            "tasks": [],
        }
        # json.dumps(head) ends with '"tasks": []}': the tasks go between the brackets.
        out.write(json.dumps(head)[:-2].encode())
        spool.seek(0)
        shutil.copyfileobj(spool, out)
        out.write(b"]}\n")


def _board_table(url: str | None, trust: list[Path] | None, foreign_after: float) -> None:
    """The whole board's table, printed page by page as it is read (landed.cli.board_table)."""
    table: BoardTable | None = None

    def started(where: str) -> Callable[[list[dict[str, Any]]], None]:
        nonlocal table
        table = BoardTable(f"landed board: {where}", _console())
        return table.add_all

    asyncio.run(_whole_board(url, trust, foreign_after, started))
    assert table is not None
    table.finish()


def _console() -> ReportConsole:
    # A pipe or file gets a wide table rather than rich's 80-column default.
    return ReportConsole(width=None if sys.stdout.isatty() else 160)


def _since(value: str | None) -> datetime | None:
    if value is None:
        return None
    try:
        at = datetime.fromisoformat(value)
    except ValueError:
        raise typer.BadParameter(
            f"{value!r} is not an ISO 8601 time (e.g. 2026-12-01T00:00:00+00:00)",
            param_hint="--since",
        ) from None
    return at if at.tzinfo is not None else at.replace(tzinfo=UTC)


@app.command("board")
def board(
    ledger: LedgerOption = None,
    trust: TrustOption = None,
    foreign_after: ForeignAfterOption = DEFAULT_FOREIGN_AFTER,
    as_json: Annotated[
        bool,
        typer.Option("--json", help='One JSON object: {"ledger", "count", "reversed", "tasks"}.'),
    ] = False,
    owner: Annotated[
        str | None, typer.Option("--owner", help="Only tasks whose latest receipt has this owner.")
    ] = None,
    loop: Annotated[
        str | None, typer.Option("--loop", help="Only tasks whose latest receipt is of this loop.")
    ] = None,
    since: Annotated[
        str | None,
        typer.Option(
            "--since", metavar="TIME", help="Only tasks whose latest receipt settled after TIME."
        ),
    ] = None,
) -> None:
    """The latest verdict of every task: a projection of the append-only ledger (GOV-2).

    The hash chain is walked first: a row past a break in it (or, with --trust, foreign) is
    marked untrusted, never shown as settled like the others. With --owner, --loop or --since
    only the tasks they select are read, through the ledger's indexes, and each row shown is
    checked by its own links (its body, its link, the next row's link onto it); --trust walks
    the whole chain then too.

    Exit codes: 0 shown (an empty ledger too); 3 no ledger there, or it could not be read.
    """
    chosen = {"owner": owner, "loop": loop, "since": _since(since)}
    filters = chosen if any(v is not None for v in chosen.values()) else None
    try:
        if filters is not None:
            place, rows = asyncio.run(_board(ledger, trust, foreign_after, filters))
            _show_rows(place, rows, as_json)
        elif as_json:
            _board_json(ledger, trust, foreign_after, sys.stdout.buffer)
            sys.stdout.flush()
        else:
            _board_table(ledger, trust, foreign_after)
            sys.stdout.flush()
    except LedgerError as exc:
        raise _fail(str(exc), json_error="ledger unreadable" if as_json else None) from None
    except BrokenPipeError:  # the reader stopped early (| head): not an error of ours
        reader_left()


def _show_rows(place: str, rows: list[dict[str, Any]], as_json: bool) -> None:
    """The filtered board (a list already read): its JSON object, or its table."""
    if not as_json:
        table = BoardTable(f"landed board: {place}", _console())
        table.add_all(rows)
        table.finish()
        return
    body = {
        "ledger": place,
        "count": len(rows),
        "reversed": sum(1 for row in rows if row["verdict"] == "reversed"),
        "untrusted": sum(1 for row in rows if row["chain"] == "untrusted"),
        "tasks": rows,
    }
    emit(json.dumps(body).encode() + b"\n")


async def _export(
    url: str | None, out: IO[bytes], latest: bool, trust: list[Path] | None, foreign_after: float
) -> tuple[str, int, int]:
    count = untrusted = 0
    async with await open_ledger(url, create=False) as ledger:
        report = await chain_report(ledger, trust, foreign_after)

        def write(line: bytes, trusted: bool) -> None:
            nonlocal count, untrusted
            if not trusted:
                line, untrusted = marked(line), untrusted + 1
            out.write(line + b"\n")
            count += 1

        if latest:
            # The board in pages: memory does not grow with the number of tasks.
            async with contextlib.aclosing(ledger.iter_board_bodies()) as pages:
                async for page in pages:
                    for sequence, body in page:
                        trusted = report.trusts(sequence)
                        write(export_line(sequence, body, trusted), trusted)
        else:
            # Closed at once if writing fails (a closed pipe): PostgreSQL's export holds a
            # transaction and a server-side cursor until its generator is closed.
            async with contextlib.aclosing(ledger.iter_rows()) as rows:
                async for sequence, receipt in rows:
                    write(canonical_json(receipt), report.trusts(sequence))
        return ledger.url, count, untrusted


@receipts_app.command("export")
def export(
    ledger: LedgerOption = None,
    output: Annotated[
        str, typer.Option("-o", "--output", metavar="FILE|-", help="Where to write; - is stdout.")
    ] = "-",
    latest: Annotated[
        bool, typer.Option("--latest", help="Only the latest attempt of each task (the board).")
    ] = False,
    trust: TrustOption = None,
    foreign_after: ForeignAfterOption = DEFAULT_FOREIGN_AFTER,
) -> None:
    """Write the ledger's receipts as DoD v1.0 JSONL, one receipt per line, in append order.

    The output is what `landed check` (and `landed check --trust KEY.pub`) reads. Every row is
    exported (each attempt, a recheck's confirmed or reversed row); `landed check` grades each
    line and its scorecard counts each task once, by the row the board shows. With --latest only
    that row is exported. A file is written whole or not at all. A row past a break in the hash
    chain (or, with --trust, foreign) is exported with "x-landed-chain": "untrusted".

    Exit codes: 0 written; 3 no ledger there, it could not be read, or FILE not written.
    """
    err = Console(stderr=True, soft_wrap=True)
    if output == "-":
        try:
            where, count, bad = asyncio.run(
                _export(ledger, sys.stdout.buffer, latest, trust, foreign_after)
            )
            sys.stdout.flush()
        except LedgerError as exc:
            raise _fail(str(exc)) from None
        except BrokenPipeError:  # the reader stopped early (| head): not an error of ours
            reader_left()
            return
        err.print(f"exported {count} receipt(s) from {where}{_untrusted(bad)}", highlight=False)
        return
    target = Path(output)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)
    except OSError as exc:
        raise _fail(f"cannot write {target}: {exc.strerror or exc}") from None
    try:
        with os.fdopen(fd, "wb") as fh:
            where, count, bad = asyncio.run(_export(ledger, fh, latest, trust, foreign_after))
        os.chmod(tmp, 0o644)  # mkstemp makes 0600; receipts are meant to be handed on
        os.replace(tmp, target)
    except BaseException as exc:
        # Written whole or not at all, whatever stopped it (Ctrl-C included).
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        if not isinstance(exc, LedgerError | OSError):
            raise
        reason = str(exc) if isinstance(exc, LedgerError) else f"{exc.strerror or exc}"
        raise _fail(f"export to {target} failed: {reason}") from None
    err.print(
        f"exported {count} receipt(s) from {where} to {target}{_untrusted(bad)}", highlight=False
    )


def _untrusted(count: int) -> str:
    if not count:
        return ""
    return (
        f"; {count} marked x-landed-chain: untrusted (past a break in the hash chain or "
        "foreign: run `landed ledger verify`)"
    )
