"""``landed board``, ``landed receipts export`` and ``landed ledger init``: the outcome ledger."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import IO, Annotated, Any, Literal

import typer
from rich.console import Console
from rich.table import Table
from rich.text import Text

from landed.cli import app
from landed.cli.check_render import _safe
from landed.cli.out import ReportConsole, emit, fail, reader_left
from landed.ledger.base import LedgerError, canonical_json
from landed.ledger.factory import open_ledger
from landed.receipts.model import Receipt, attempt_of

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


def _row(receipt: Receipt) -> dict[str, Any]:
    ext = receipt.landed
    signed = sum(1 for p in receipt.proof if p.landed and "signature" in p.landed)
    return {
        "task_id": receipt.task_id,
        "attempt": attempt_of(receipt),
        "owner": receipt.owner,
        "claimed_status": receipt.claimed_status,
        "verdict": receipt.verdict,
        "verdict_by": receipt.verdict_by,
        "rung": ext.rung if ext else None,
        "settled_at": receipt.settled_at.isoformat() if receipt.settled_at else None,
        "signed_proofs": signed,
    }


async def _init(url: str | None) -> str:
    async with await open_ledger(url, create=True) as ledger:
        return ledger.url


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
        where = asyncio.run(_init(ledger))
    except LedgerError as exc:
        raise _fail(str(exc), json_error="ledger not created" if as_json else None) from None
    if as_json:
        typer.echo(json.dumps({"ledger": where}))
    else:
        typer.echo(f"ledger ready: {where}")


async def _board(url: str | None) -> tuple[str, list[Receipt]]:
    async with await open_ledger(url, create=False) as ledger:
        return ledger.url, await ledger.board()


@app.command("board")
def board(
    ledger: LedgerOption = None,
    as_json: Annotated[
        bool,
        typer.Option("--json", help='One JSON object: {"ledger", "count", "reversed", "tasks"}.'),
    ] = False,
) -> None:
    """The latest verdict of every task: a projection of the append-only ledger (GOV-2).

    Exit codes: 0 shown (an empty ledger too); 3 no ledger there, or it could not be read.
    """
    try:
        where, receipts = asyncio.run(_board(ledger))
    except LedgerError as exc:
        raise _fail(str(exc), json_error="ledger unreadable" if as_json else None) from None
    rows = [_row(r) for r in receipts]
    reversed_ = sum(1 for row in rows if row["verdict"] == "reversed")
    if as_json:
        body = {"ledger": where, "count": len(rows), "reversed": reversed_, "tasks": rows}
        emit(json.dumps(body).encode() + b"\n")
        return
    table = Table(title=Text(f"landed board: {where}"), title_justify="left")
    columns = ("task", "attempt", "owner", "claimed", "verdict", "rung", "settled at", "signed")
    for column in columns:
        justify: Literal["left", "right"] = "right" if column == "attempt" else "left"
        table.add_column(column, overflow="fold", justify=justify)
    for row in rows:
        verdict = row["verdict"] or "-"
        style = "green" if verdict in {"verified", "reconciled", "done"} else "yellow"
        # Every cell is plain text: a task id or owner such as "[/]" is not rich markup.
        table.add_row(
            Text(_safe(row["task_id"])),
            str(row["attempt"]),
            Text(_safe(row["owner"] or "-")),
            Text(_safe(row["claimed_status"])),
            Text(_safe(verdict), style=style),
            Text(_safe(row["rung"] or "-")),
            row["settled_at"] or "-",
            str(row["signed_proofs"]),
        )
    # A pipe or file gets a wide table rather than rich's 80-column default.
    console = ReportConsole(width=None if sys.stdout.isatty() else 160)
    console.print(table)
    console.print(f"{len(rows)} task(s), {reversed_} reversed", highlight=False)


async def _export(url: str | None, out: IO[bytes], latest: bool) -> tuple[str, int]:
    count = 0
    async with await open_ledger(url, create=False) as ledger:
        if latest:
            for receipt in await ledger.board():
                out.write(canonical_json(receipt) + b"\n")
                count += 1
        else:
            # Closed at once if writing fails (a closed pipe): PostgreSQL's export holds a
            # transaction and a server-side cursor until its generator is closed.
            async with contextlib.aclosing(ledger.iter_receipts()) as receipts:
                async for receipt in receipts:
                    out.write(canonical_json(receipt) + b"\n")
                    count += 1
        return ledger.url, count


@receipts_app.command("export")
def export(
    ledger: LedgerOption = None,
    output: Annotated[
        str, typer.Option("-o", "--output", metavar="FILE|-", help="Where to write; - is stdout.")
    ] = "-",
    latest: Annotated[
        bool, typer.Option("--latest", help="Only the latest attempt of each task (the board).")
    ] = False,
) -> None:
    """Write the ledger's receipts as DoD v1.0 JSONL, one receipt per line, in append order.

    The output is what `landed check` (and `landed check --trust KEY.pub`) reads. Every attempt
    is exported and `landed check` scores each line as a claim; with --latest only the attempt
    the board shows is, so the scorecard then matches the board. A file is written whole or not
    at all.

    Exit codes: 0 written; 3 no ledger there, it could not be read, or FILE not written.
    """
    err = Console(stderr=True, soft_wrap=True)
    if output == "-":
        try:
            where, count = asyncio.run(_export(ledger, sys.stdout.buffer, latest))
            sys.stdout.flush()
        except LedgerError as exc:
            raise _fail(str(exc)) from None
        except BrokenPipeError:  # the reader stopped early (| head): not an error of ours
            reader_left()
            return
        err.print(f"exported {count} receipt(s) from {where}", highlight=False)
        return
    target = Path(output)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)
    except OSError as exc:
        raise _fail(f"cannot write {target}: {exc.strerror or exc}") from None
    try:
        with os.fdopen(fd, "wb") as fh:
            where, count = asyncio.run(_export(ledger, fh, latest))
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
    err.print(f"exported {count} receipt(s) from {where} to {target}", highlight=False)
