"""``landed ledger verify``: walk the ledger's hash chain and check the runner's signed heads."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from landed.cli.ledger import LedgerOption, ledger_app
from landed.cli.ledger_witness import (
    AddressOption,
    NamespaceOption,
    WitnessError,
    WitnessFileOption,
    WitnessOption,
    WitnessRead,
    witness_findings,
    witness_reader,
)
from landed.cli.out import emit, fail
from landed.cli.report_console import ReportConsole
from landed.ledger.audit import ChainReport, audit
from landed.ledger.base import LedgerError
from landed.ledger.chain import DEFAULT_FOREIGN_AFTER_S
from landed.ledger.factory import open_ledger
from landed.ledger.links import CHAINS
from landed.signing import SigningError, TrustStore

__all__ = ["verify_ledger"]

EXIT_TAMPERED = 1
EXIT_USAGE = 2
EXIT_UNREADABLE = 3


async def _walk(
    url: str | None,
    trust: TrustStore | None,
    max_unsigned: int | None,
    foreign_after: float,
    witness: WitnessRead,
) -> tuple[str, ChainReport]:
    async with await open_ledger(url, create=False) as ledger:
        report = await audit(ledger, trust, max_unsigned, foreign_after)
        if witness is not None and trust is not None:
            await witness_findings(ledger, report, await witness(trust), trust)
        return ledger.url, report


HeadKeysOption = Annotated[
    list[Path] | None,
    typer.Option(
        "--trust",
        metavar="KEY.pub|DIR",
        help="The runner's head public key(s) (LANDED_RUNNER_HEAD_KEY's .pub); repeatable.",
    ),
]
ChainOnlyOption = Annotated[
    bool,
    typer.Option(
        "--chain-only",
        help="Check the links alone, without signed heads: a table owner who recomputes "
        "the whole chain then passes.",
    ),
]
MaxUnsignedOption = Annotated[
    int | None,
    typer.Option(
        "--max-unsigned",
        min=0,
        metavar="N",
        help="Also report more than N rows after the last trusted signed head.",
    ),
]
ForeignAfterSecondsOption = Annotated[
    float,
    typer.Option(
        "--foreign-after",
        min=0,
        metavar="SECONDS",
        help="Name a row no trusted head vouches for, this old, as foreign (the runner "
        "signs its own rows within its head interval).",
    ),
]


def _trust_store(
    trust: list[Path] | None, chain_only: bool, witnessed: bool, json_error: str | None
) -> TrustStore | None:
    """The runner's head keys to check the signed heads with (None: --chain-only)."""
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
    if witnessed and store is None:
        raise fail("--witness needs --trust", EXIT_USAGE, json_error=json_error)
    return store


@ledger_app.command("verify")
def verify_ledger(
    ledger: LedgerOption = None,
    trust: HeadKeysOption = None,
    chain_only: ChainOnlyOption = False,
    max_unsigned: MaxUnsignedOption = None,
    foreign_after: ForeignAfterSecondsOption = DEFAULT_FOREIGN_AFTER_S,
    as_json: Annotated[
        bool, typer.Option("--json", help="One JSON object: the report and its findings.")
    ] = False,
    witness: WitnessOption = False,
    witness_file: WitnessFileOption = None,
    address: AddressOption = None,
    namespace: NamespaceOption = None,
) -> None:
    """Walk the ledger's hash chains and report any deleted, inserted, edited, reordered or
    foreign row of receipts, claims and events.

    Each row links to the one before it over every column a read selects on (task_id, attempt,
    stage, verdict, owner, times, body hash; landed.ledger.links); the runner signs the chain
    heads with its own key every 100 appends and every 30 s, vouching for the rows it wrote
    itself. A row changed below a signed head is reported even if the whole chain was
    recomputed after it; a row no trusted head vouches for, older than --foreign-after, is
    reported foreign (written by other means). Rows after the last signed head are counted as
    the unsigned tail: a deletion there shows only as a shorter tail.

    With --witness (or --witness-file), the ledger is also compared with the heads its
    witness holds outside it: a ledger cut back to an earlier signed head is a cut-back.

    Exit codes: 0 the chain and every signed head hold; 1 the ledger was tampered with (each
    finding names the row's sequence); 2 usage (neither --trust nor --chain-only, a bad key
    file); 3 no ledger there, or it (or its witness) could not be read.
    """
    witnessed = witness or witness_file is not None
    store = _trust_store(trust, chain_only, witnessed, "usage" if as_json else None)
    try:
        read = witness_reader(witness, witness_file, address, namespace)
        where, report = asyncio.run(_walk(ledger, store, max_unsigned, foreign_after, read))
    except WitnessError as exc:
        unread = "witness unreadable" if as_json else None
        raise fail(str(exc), EXIT_UNREADABLE, json_error=unread) from None
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
    for side in report.sides:
        where = f"chain positions 1-{side.last_pos}" if side.last_pos else "no chain yet"
        say(f"{side.chain}: {side.rows} row(s), {where}", highlight=False)
    if report.migrated_upto:
        say(
            f"positions 1-{report.migrated_upto} were chained when the ledger was upgraded to "
            "the hash chain: the chain proves their order and content only from then on",
            highlight=False,
        )
    if any(report.rechained.values()):
        done = report.rechained
        shown = ", ".join(f"{c} 1-{done[c]}" for c in CHAINS if done.get(c))
        say(
            f"migration-v2: {shown} were re-chained when the ledger was upgraded to v2 links: "
            "the chain proves their columns only from then on",
            highlight=False,
        )
    found = report.all_findings()
    for finding in found:
        where = "" if finding.chain == "receipts" else f" ({finding.chain})"
        say(f"[red]{finding.kind}[/red]{where}: {escape(finding.message)}", highlight=False)
    if report.total() > len(found):
        say(f"... and {report.total() - len(found)} more", highlight=False)
    verdict = "[red]TAMPERED[/red]" if report.tampered else "[green]intact[/green]"
    say(f"{verdict}: {report.total()} finding(s)", highlight=False)
