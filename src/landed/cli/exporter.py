"""``landed exporter``: the scorecard from the ledger for Prometheus, and a page to look at."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

import typer
from pydantic import ValidationError

from landed.cli.out import fail
from landed.cli.root import app
from landed.cli.signals import stop_requested


async def _serve(overrides: dict[str, Any], as_json: bool) -> None:
    from landed.telemetry.exporter import Exporter
    from landed.telemetry.settings import ExporterSettings

    settings = ExporterSettings(**{k: v for k, v in overrides.items() if v is not None})
    exporter = Exporter(settings)
    with stop_requested() as stop:
        url = await exporter.start()
        try:
            info = {
                "url": url,
                "metrics": f"{url}metrics",
                "ledger": exporter.ledger_shown,
                "ledger_up": exporter.collector.up,
                "catch_up_seconds": round(exporter.catch_up_seconds, 3),
                "rows": exporter.board.rows_read,
                "state": str(exporter.state_path) if exporter.state_path else None,
                "resumed": exporter.resumed,
            }
            if as_json:
                print(json.dumps({"event": "ready", **info}), flush=True)
            else:
                print(f"landed exporter: page {url}  metrics {url}metrics", flush=True)
                how = f"resumed from {info['state']}, " if exporter.resumed else ""
                print(
                    f"landed exporter: {how}read {info['rows']:,} rows of {info['ledger']} in "
                    f"{info['catch_up_seconds']} s",
                    flush=True,
                )
            await stop.wait()
        finally:
            await exporter.stop()


@app.command("exporter")
def exporter(
    ledger: str | None = typer.Option(
        None, help="Ledger URL (default: LANDED_EXPORTER__LEDGER_URL, LANDED_LEDGER_URL, .landed)."
    ),
    host: str | None = typer.Option(None, help="Address to bind (default 127.0.0.1)."),
    port: int | None = typer.Option(None, help="Port (default 9464; 0 for a free one, printed)."),
    temporal_ui: str | None = typer.Option(None, help="Temporal Web UI the page links to."),
    state: Path | None = typer.Option(
        None,
        "--state",
        help="State file the sums and cursors are saved to and resumed from (default: beside a "
        "SQLite ledger, <file>.exporter-state.json; .landed/exporter-state-<id>.json else).",
    ),
    no_state: bool = typer.Option(
        False, "--no-state", help="Read the whole ledger at start; save no state."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print the addresses as one JSON line."),
) -> None:
    """Serve the scorecard computed from the ledger on /metrics (Prometheus) and a page on /.

    The sums and cursors are saved to a state file every STATE_EVERY_SECONDS and at stop; a
    start reads on from it only if the ledger still holds the rows it counted and the settings
    that shape the figures are the same, else it says why and reads the ledger from its start.

    Settings also come from LANDED_EXPORTER__* (PORT, HOST, LEDGER_URL, MAX_LABEL_VALUES,
    CLAIM_LAG_SECONDS, TEMPORAL_UI, NAMESPACE, STATE_PATH, USE_STATE, STATE_EVERY_SECONDS).
    Exit codes: 0 stopped on request; 3 invalid settings or the port could not be bound.
    """
    from landed.ledger.base import LedgerError

    overrides: dict[str, Any] = {
        "ledger_url": ledger,
        "host": host,
        "port": port,
        "temporal_ui": temporal_ui,
        "state_path": state,
        "use_state": False if no_state else None,
    }
    try:
        asyncio.run(_serve(overrides, as_json))
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
        raise fail(f"landed exporter: invalid settings: {problems}", 3) from None
    except LedgerError as exc:
        raise fail(f"landed exporter: {exc}", 3) from None
    except OSError as exc:
        print(f"landed exporter: cannot listen: {exc}; pick another --port", file=sys.stderr)
        raise typer.Exit(3) from None
