"""``landed snapshot``: take the before-readings of a contract set into a file, before the act."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import typer

from landed.cli.out import fail
from landed.cli.root import app
from landed.probes.guard import ContractsUnreadable, load_contracts
from landed.probes.settings import ConfigError
from landed.probes.snapshot import Snapshot, SnapshotError, take_snapshot, write_snapshot
from landed.probes.sources import load_registry

EXIT_TAKEN = 0
EXIT_NOT_TAKEN = 3

_HELP = """Read every completion contract in a JSONL file once, now, and keep the readings.

Run it before the action; afterwards `landed verify --before FILE` (one probe) or `landed
guard --before FILE` (the set) judge against these readings: an outcome that was already
there is vacuous (not done), and a change expectation (--change +45) is judged on after minus
before. The file carries an HMAC under a key kept in your state directory
($XDG_STATE_HOME/landed/snapshot.key, or --key / LANDED_SNAPSHOT_KEY_FILE), so an edit to it
is refused when it is read. A probe that fails now is kept as the probe-error it is: nothing
judged against it passes.

Exit codes: 0 taken (every line was a valid contract); 3 the file, a contract or the
configuration is invalid, and no snapshot was written."""


def _paragraphs(text: str) -> str:
    return "\n\n".join(" ".join(part.split()) for part in text.split("\n\n"))


@app.command("snapshot", help=_paragraphs(_HELP))
def snapshot_command(
    contracts: str = typer.Option(..., "--contracts", help="JSONL file of completion contracts."),
    out: Path = typer.Option(..., "--out", help="Where to write the snapshot."),
    config: str | None = typer.Option(None, "--config", help="landed.toml with the sources."),
    key: Path | None = typer.Option(None, "--key", help="The snapshot key file (made if absent)."),
    as_json: bool = typer.Option(False, "--json", help="Print a summary as JSON."),
) -> None:
    what = "invalid contracts" if as_json else None
    try:
        parsed, problems = load_contracts(Path(contracts))
    except ContractsUnreadable as exc:
        raise fail(str(exc), EXIT_NOT_TAKEN, json_error=what) from None
    if problems:
        lines = "; ".join(f"line {p.line}: {p.problem}" for p in problems)
        raise fail(f"not a contracts file to snapshot: {lines}", EXIT_NOT_TAKEN, json_error=what)
    try:
        registry = load_registry(config_file=config, role="landed-cli", allow_unsourced=True)
    except ConfigError as exc:
        raise fail(
            str(exc), EXIT_NOT_TAKEN, json_error="configuration" if as_json else None
        ) from None

    async def take() -> Snapshot:
        async with registry:
            return await take_snapshot([c for _, c in parsed], registry, observer=registry.observer)

    snap = asyncio.run(take())
    try:
        write_snapshot(snap, out, key_file=key)
    except (SnapshotError, OSError) as exc:
        raise fail(str(exc), EXIT_NOT_TAKEN, json_error="snapshot" if as_json else None) from None
    readings = [
        {
            "action": e.action,
            "expectation": e.observation.expectation,
            "value": e.observation.value,
            "outcome": e.observation.outcome.value,
        }
        for e in snap.entries
    ]
    if as_json:
        typer.echo(json.dumps({"snapshot": str(out), "readings": readings}, indent=2))
    else:
        for r in readings:
            typer.echo(f"{r['action']}: {r['expectation']} read {r['value']!r} ({r['outcome']})")
        typer.echo(f"landed snapshot: {len(readings)} before-reading(s) in {out}")
    raise typer.Exit(EXIT_TAKEN)
