"""``landed ledger verify``: walk the ledger's hash chain and check the runner's signed heads."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from landed.cli.ledger import LedgerOption, ledger_app
from landed.cli.out import ReportConsole, emit, fail
from landed.ledger.audit import ChainReport, audit
from landed.ledger.base import LedgerError
from landed.ledger.factory import open_ledger
from landed.signing import SigningError, TrustStore

__all__ = ["verify_ledger"]

EXIT_TAMPERED = 1
EXIT_USAGE = 2
EXIT_UNREADABLE = 3


async def _walk(
    url: str | None, trust: TrustStore | None, max_unsigned: int | None
) -> tuple[str, ChainReport]:
    async with await open_ledger(url, create=False) as ledger:
        return ledger.url, await audit(ledger, trust, max_unsigned)


@ledger_app.command("verify")
def verify_ledger(
    ledger: LedgerOption = None,
    trust: Annotated[
        list[Path] | None,
        typer.Option(
            "--trust",
            metavar="KEY.pub|DIR",
            help="The runner's head public key(s) (LANDED_RUNNER_HEAD_KEY's .pub); repeatable.",
        ),
    ] = None,
    chain_only: Annotated[
        bool,
        typer.Option(
            "--chain-only",
            help="Check the links alone, without signed heads: a table owner who recomputes "
            "the whole chain then passes.",
        ),
    ] = False,
    max_unsigned: Annotated[
        int | None,
        typer.Option(
            "--max-unsigned",
            min=0,
            metavar="N",
            help="Also report more than N rows after the last trusted signed head.",
        ),
    ] = None,
    as_json: Annotated[
        bool, typer.Option("--json", help="One JSON object: the report and its findings.")
    ] = False,
) -> None:
    """Walk the ledger's hash chain and report any deleted, inserted, edited or reordered receipt.

    Each receipt row links to the one before it (landed.ledger.chain); the runner signs the
    chain head with its own key every 100 appends and every 30 s. A row changed below a signed
    head is reported even if the whole chain was recomputed after it. Rows after the last
    signed head are counted as the unsigned tail: a deletion there shows only as a shorter tail.

    Exit codes: 0 the chain and every signed head hold; 1 the ledger was tampered with (each
    finding names the row's sequence); 2 usage (neither --trust nor --chain-only, a bad key
    file); 3 no ledger there, or it could not be read.
    """
    json_error = "usage" if as_json else None
    if not trust and not chain_only:
        raise fail(
            "pass --trust RUNNER_HEAD_KEY.pub (the public half of the runner's "
            "LANDED_RUNNER_HEAD_KEY) to check the signed heads, or --chain-only to check the "
            "links alone",
            EXIT_USAGE,
            json_error=json_error,
        )
    try:
        store = TrustStore.load(trust) if trust else None
    except SigningError as exc:
        raise fail(str(exc), EXIT_USAGE, json_error=json_error) from None
    try:
        where, report = asyncio.run(_walk(ledger, store, max_unsigned))
    except LedgerError as exc:
        raise fail(
            str(exc), EXIT_UNREADABLE, json_error="ledger unreadable" if as_json else None
        ) from None
    code = EXIT_TAMPERED if report.tampered else 0
    if as_json:
        emit(json.dumps({"ledger": where, **report.as_dict()}).encode() + b"\n")
        raise typer.Exit(code)
    _print(where, report)
    raise typer.Exit(code)


def _print(where: str, report: ChainReport) -> None:
    console = ReportConsole(soft_wrap=True)
    say = console.print
    say(f"landed ledger verify: {escape(where)}", highlight=False)
    positions = f"chain positions 1-{report.last_pos}" if report.last_pos else "no chain yet"
    say(f"{report.rows} row(s), {positions}", highlight=False)
    if report.heads_checked:
        say(
            f"{report.signed_heads} trusted signed head(s), the last at position "
            f"{report.last_signed_pos} (sequence {report.last_signed_sequence}); "
            f"{report.unsigned_tail} row(s) after it are not yet covered by a signature",
            highlight=False,
        )
    else:
        say("signed heads not checked (--chain-only)", highlight=False)
    if report.migrated_upto:
        say(
            f"positions 1-{report.migrated_upto} were chained when the ledger was upgraded to "
            "the hash chain: the chain proves their order and content only from then on",
            highlight=False,
        )
    for finding in report.findings:
        say(f"[red]{finding.kind}[/red]: {escape(finding.message)}", highlight=False)
    if report.findings_total > len(report.findings):
        say(f"... and {report.findings_total - len(report.findings)} more", highlight=False)
    verdict = "[red]TAMPERED[/red]" if report.tampered else "[green]intact[/green]"
    say(f"{verdict}: {report.findings_total} finding(s)", highlight=False)
