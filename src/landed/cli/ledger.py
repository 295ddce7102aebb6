"""``landed board``, ``landed receipts export`` and ``landed ledger init``: the outcome ledger."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import sys
import tempfile
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Annotated, Any, Literal

import typer
from rich.console import Console
from rich.table import Table
from rich.text import Text

from landed.cli.board_read import filtered_rows
from landed.cli.check_render import _safe
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
from landed.receipts.model import Receipt, attempt_of
from landed.receipts.plain import is_done

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
        "done": is_done(receipt),
        "rung": ext.rung if ext else None,
        "settled_at": receipt.settled_at.isoformat() if receipt.settled_at else None,
        "signed_proofs": signed,
    }


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
    where: dict[str, Any] | None = None,
) -> tuple[str, list[dict[str, Any]]]:
    """The board's rows as shown (each with its "chain"), and where the ledger is."""
    async with await open_ledger(url, create=False) as ledger:
        if where and not trust:
            # Filtered: an indexed read, each row checked by its own chain window.
            found = await filtered_rows(ledger, **where)
            return ledger.url, [_shown(r, holds) for _, r, holds in found]
        report = await chain_report(ledger, trust, foreign_after)
        if where:
            rows = await ledger.board_where(**where)
            return ledger.url, [_shown(r, report.trusts(seq)) for seq, r in rows]
        # The whole board in pages: only the rows as shown are kept, never the receipts.
        shown = []
        async with contextlib.aclosing(ledger.iter_board_rows()) as board:
            async for seq, receipt in board:
                shown.append(_shown(receipt, report.trusts(seq)))
        return ledger.url, shown


def _shown(receipt: Receipt, trusted: bool) -> dict[str, Any]:
    return _row(receipt) | {"chain": "ok" if trusted else "untrusted"}


async def _board_json(
    url: str | None, trust: list[Path] | None, foreign_after: float, out: IO[bytes]
) -> None:
    """The whole board's JSON object, streamed: its tasks are spooled to a temporary file as
    they are read (the counts come first in the object), so memory does not grow with them.
    Nothing is written to ``out`` before the whole board was read."""
    count = reversed_ = untrusted = 0
    async with await open_ledger(url, create=False) as ledger:
        report = await chain_report(ledger, trust, foreign_after)
        with tempfile.TemporaryFile() as spool:
            async with contextlib.aclosing(ledger.iter_board_rows()) as board:
                async for seq, receipt in board:
                    row = _shown(receipt, report.trusts(seq))
                    spool.write((b", " if count else b"") + json.dumps(row).encode())
                    count += 1
                    reversed_ += row["verdict"] == "reversed"
                    untrusted += row["chain"] == "untrusted"
            head = {
                "ledger": ledger.url,
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
    if as_json and filters is None:
        try:
            asyncio.run(_board_json(ledger, trust, foreign_after, sys.stdout.buffer))
            sys.stdout.flush()
        except LedgerError as exc:
            raise _fail(str(exc), json_error="ledger unreadable") from None
        except BrokenPipeError:
            reader_left()
        return
    try:
        place, rows = asyncio.run(_board(ledger, trust, foreign_after, filters))
    except LedgerError as exc:
        raise _fail(str(exc), json_error="ledger unreadable" if as_json else None) from None
    reversed_ = sum(1 for row in rows if row["verdict"] == "reversed")
    untrusted = sum(1 for row in rows if row["chain"] == "untrusted")
    if as_json:
        body = {
            "ledger": place,
            "count": len(rows),
            "reversed": reversed_,
            "untrusted": untrusted,
            "tasks": rows,
        }
        emit(json.dumps(body).encode() + b"\n")
        return
    _print_board(place, rows, reversed_, untrusted)


_BOARD_COLUMNS = (
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
)


def _done_cell(row: dict[str, Any]) -> Text:
    """DONE only for a trusted row whose receipt is done (``Receipt.done``: settled, with a
    verdict that proves the outcome); a row the chain does not prove is never DONE."""
    done = row["done"] and row["chain"] != "untrusted"
    return Text("DONE", style="green") if done else Text("NOT DONE", style="yellow")


def _print_board(place: str, rows: list[dict[str, Any]], reversed_: int, untrusted: int) -> None:
    table = Table(title=Text(f"landed board: {place}"), title_justify="left")
    for column in _BOARD_COLUMNS:
        justify: Literal["left", "right"] = "right" if column == "attempt" else "left"
        table.add_column(column, overflow="fold", justify=justify)
    for row in rows:
        # Every cell is plain text: a task id or owner such as "[/]" is not rich markup.
        table.add_row(
            Text(_safe(row["task_id"])),
            str(row["attempt"]),
            Text(_safe(row["owner"] or "-")),
            Text(_safe(row["claimed_status"])),
            _done_cell(row),
            Text(_safe(row["verdict"] or "-")),
            Text(_safe(row["rung"] or "-")),
            row["settled_at"] or "-",
            str(row["signed_proofs"]),
            Text("UNTRUSTED", style="bold red") if row["chain"] == "untrusted" else "ok",
        )
    # A pipe or file gets a wide table rather than rich's 80-column default.
    console = ReportConsole(width=None if sys.stdout.isatty() else 160)
    console.print(table)
    done = sum(1 for row in rows if _done_cell(row).plain == "DONE")
    console.print(
        f"{len(rows)} task(s): {done} DONE, {len(rows) - done} NOT DONE; {reversed_} reversed",
        highlight=False,
    )
    if untrusted:
        console.print(
            f"[red]{untrusted} row(s) UNTRUSTED[/red]: past a break in the hash chain or "
            "foreign; run `landed ledger verify --trust RUNNER_HEAD_KEY.pub`",
            highlight=False,
        )


async def _export(
    url: str | None, out: IO[bytes], latest: bool, trust: list[Path] | None, foreign_after: float
) -> tuple[str, int, int]:
    count = untrusted = 0
    async with await open_ledger(url, create=False) as ledger:
        report = await chain_report(ledger, trust, foreign_after)

        def write(sequence: int, receipt: Receipt) -> None:
            nonlocal count, untrusted
            line = canonical_json(receipt)
            if not report.trusts(sequence):
                line, untrusted = marked(line), untrusted + 1
            out.write(line + b"\n")
            count += 1

        if latest:
            # The board in pages: memory does not grow with the number of tasks.
            async with contextlib.aclosing(ledger.iter_board_rows()) as board:
                async for sequence, receipt in board:
                    write(sequence, receipt)
        else:
            # Closed at once if writing fails (a closed pipe): PostgreSQL's export holds a
            # transaction and a server-side cursor until its generator is closed.
            async with contextlib.aclosing(ledger.iter_rows()) as rows:
                async for sequence, receipt in rows:
                    write(sequence, receipt)
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
