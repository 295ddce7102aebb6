"""``landed doctor``: checks a setup end to end and says what to fix: Temporal answers, its
namespace has landed's search attributes, each role polls its task queue, the actor has acts
registered, the clocks agree, the ledger opens at the current schema, the keys are where the
settings say, and the verifier's sources resolve."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import typer
from rich.markup import escape

from landed.cli.doctor_check import Check
from landed.cli.ledger import LedgerOption
from landed.cli.out import emit
from landed.cli.report_console import ReportConsole
from landed.cli.root import app

__all__ = ["doctor"]

EXIT_PROBLEM = 1


def _ledger_url(given: str | None, home: Path) -> str:
    """--ledger, else the runner's setting (LANDED_RUNNER_LEDGER_URL, LANDED_LEDGER_URL), else
    the ledger ``landed dev --dir HOME`` uses."""
    import os

    for url in (
        given,
        os.environ.get("LANDED_RUNNER_LEDGER_URL"),
        os.environ.get("LANDED_LEDGER_URL"),
    ):
        if url:
            return url
    return f"sqlite:///{(home / 'ledger.db').resolve()}"


async def _live(
    address: str | None, namespace: str | None, url: str, timeout: float
) -> list[Check]:
    """Temporal, the roles polling on it and their acts, then the clocks: Temporal's (from the
    roles' preflight) and the ledger's."""
    from landed.cli.doctor_clock import Offset, clock_check, ledger_offset
    from landed.cli.doctor_roles import role_checks
    from landed.cli.doctor_temporal import temporal_checks

    ledger_clock = asyncio.ensure_future(ledger_offset(url, timeout))
    temporal, client = await temporal_checks(address, namespace, timeout)
    roles, temporal_clock = await role_checks(client, timeout)
    offsets: list[Offset] = []
    unchecked = [] if temporal_clock else ["Temporal's clock not read (no preflight started)"]
    for found in (temporal_clock, await ledger_clock):
        if isinstance(found, Offset):
            offsets.append(found)
        elif isinstance(found, str):
            unchecked.append(found)
    return [*temporal, *roles, clock_check(offsets, unchecked)]


async def _run(
    address: str | None, namespace: str | None, ledger: str | None, home: Path, timeout: float
) -> list[Check]:
    from landed.cli.doctor_setup import ledger_check, signing_checks
    from landed.cli.doctor_sources import sources_check

    url = _ledger_url(ledger, home)
    live, ledger_found, sources = await asyncio.gather(
        _live(address, namespace, url, timeout),
        ledger_check(url, timeout),
        sources_check(timeout),
    )
    return [*live, ledger_found, *signing_checks(home), sources]


def _show(checks: list[Check]) -> None:
    out = ReportConsole(highlight=False, soft_wrap=True)
    for check in checks:
        mark = "[green]ok[/green]     " if check.ok else "[bold red]PROBLEM[/bold red]"
        out.print(f"{mark}  {check.name:<18} {escape(check.detail)}")
        if check.fix:
            out.print(f"{'':<9}{'':<19}fix: {escape(check.fix)}")
    bad = sum(not c.ok for c in checks)
    out.print("\nall checks pass" if not bad else f"\n{bad} problem(s) to fix")


@app.command("doctor")
def doctor(
    address: str | None = typer.Option(
        None,
        "--address",
        help="Temporal host:port (default: TEMPORAL_ADDRESS, else localhost:7233).",
    ),
    namespace: str | None = typer.Option(
        None, "--namespace", help="Temporal namespace (default: TEMPORAL_NAMESPACE, else default)."
    ),
    ledger: LedgerOption = None,
    home: Path = typer.Option(
        Path(".landed"),
        "--dir",
        help="landed dev's --dir: its ledger and keys stand in for settings left unset.",
    ),
    timeout: float = typer.Option(
        5.0, "--timeout", min=0.1, max=120, help="Seconds each server may take to answer."
    ),
    as_json: bool = typer.Option(False, "--json", help='One JSON object: {"ok", "checks"}.'),
) -> None:
    """Check your setup and say what to fix: the Temporal address answers, its namespace has
    landed's search attributes, the actor, the verifier and the runner each poll their task
    queue, the actor has acts registered (the runner's preflight asks it; nothing is acted),
    this machine's clock is within 5 s of Temporal's and a PostgreSQL ledger's, the ledger
    opens and its schema is current, the verifier's
    signing key and the runner's trusted keys are where the settings say (and the runner
    trusts the verifier's key), and every source the verifier's settings name resolves.

    Settings are read as the roles read them (TEMPORAL_*, LANDED_RUNNER_*, LANDED_VERIFIER_*,
    LANDED_SOURCES__*, landed.toml); one left unset falls back to what `landed dev --dir DIR`
    uses. Each check prints ok, or PROBLEM and the fix.

    Exit codes: 0 every check passed; 1 at least one problem (each names its fix).
    """
    checks = asyncio.run(_run(address, namespace, ledger, home, timeout))
    if as_json:
        report = {"ok": all(c.ok for c in checks), "checks": [c.as_dict() for c in checks]}
        emit((json.dumps(report, indent=2) + "\n").encode())
    else:
        _show(checks)
    if not all(c.ok for c in checks):
        raise typer.Exit(EXIT_PROBLEM)
