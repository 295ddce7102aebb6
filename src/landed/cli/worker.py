"""``landed worker ROLE``: one role per process, with its own connection and identity."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from enum import StrEnum
from typing import Any

import typer
from pydantic import ValidationError
from pydantic_settings import SettingsError

from landed.cli.root import app
from landed.cli.signals import stop_requested


class Role(StrEnum):
    actor = "actor"
    verifier = "verifier"
    runner = "runner"


def _ready(view: dict[str, Any]) -> None:
    # One JSON line on stdout when polling starts: what `landed dev` and tests wait for.
    print(json.dumps({"event": "ready", **view}, sort_keys=True), flush=True)


async def _serve(role: str, address: str | None, namespace: str | None, check: bool) -> None:
    from landed.temporal.preflight import preflight, refuse_actor_env
    from landed.temporal.workers import run_role

    if check:
        view = preflight(role)
        if role == "runner":
            view["ledger"] = await _ledger_schema()
        print(json.dumps({"event": "checked", **view}, sort_keys=True), flush=True)
        return
    if role == "actor":
        refuse_actor_env(os.environ)
    with stop_requested() as stop:
        await run_role(role, stop=stop, on_ready=_ready, address=address, namespace=namespace)


async def _ledger_schema() -> dict[str, Any]:
    """The runner's ledger schema: which version it found and what to run (on stderr too)."""
    from landed.ledger.factory import default_url
    from landed.ledger.schema_check import schema_report
    from landed.temporal.settings import RunnerSettings

    url = RunnerSettings().ledger_url or default_url()
    try:
        found = await schema_report(url)
    except Exception as exc:  # reported, never taken for an empty ledger
        found = {"status": "unreachable", "error": " ".join(str(exc).split())[:300]}
        print(f"landed worker runner: the ledger did not answer: {found['error']}", file=sys.stderr)
        return found
    if found["status"] != "current":
        print(
            f"landed worker runner: ledger schema version {found['found']} found, this landed "
            f"needs {found['needs']} ({found['status']}); run {found['run']}",
            file=sys.stderr,
        )
    return found


@app.command("worker")
def worker(
    role: Role = typer.Argument(
        ...,
        help="actor (runs acts), verifier (reads back and signs), "
        "runner (workflows, settle, ledger).",
    ),
    address: str | None = typer.Option(
        None, help="Temporal frontend host:port (default: TEMPORAL_ADDRESS or localhost:7233)."
    ),
    namespace: str | None = typer.Option(
        None, help="Temporal namespace (default: TEMPORAL_NAMESPACE or default)."
    ),
    check: bool = typer.Option(
        False,
        "--check",
        help="Check the role's settings, keys and sources without connecting; print them as "
        'one JSON line {"event": "checked", ...} and exit 0 (or 3 naming what to fix).',
    ),
) -> None:
    """Run one worker role until SIGINT/SIGTERM.

    Each role reads only its own settings: LANDED_ACTOR_*, LANDED_VERIFIER_*, LANDED_RUNNER_*
    (plus LANDED_LEDGER_URL for the runner), and Temporal's environment configuration
    (TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE, TEMPORAL_API_KEY, TLS) for the connection.
    Prints one JSON line {"event": "ready", ...} when it polls, then one line per task event
    on stderr (JSON when LANDED_LOG_FORMAT=json). Traces go to the OTLP endpoint the standard
    OTEL_* variables name (OTEL_EXPORTER_OTLP_ENDPOINT, _PROTOCOL, OTEL_SERVICE_NAME; off
    when unset).

    Exit codes: 0 stopped cleanly; 1 the worker failed while running; 3 invalid configuration
    (the message names the setting to fix).
    """
    from landed.ledger.base import LedgerError
    from landed.probes.settings import ConfigError, settings_problems
    from landed.signing import SigningError
    from landed.task.acts import ActLoadError
    from landed.telemetry.logs import LogFormatError
    from landed.telemetry.tracing import TracingConfigError
    from landed.temporal.plugin import ConnectionSettingsError
    from landed.temporal.role_setup import RoleError
    from landed.temporal.settings import SeparationError

    try:
        asyncio.run(_serve(role.value, address, namespace, check))
    except (
        RoleError,
        SeparationError,
        SigningError,
        LedgerError,
        ActLoadError,
        ConfigError,
        LogFormatError,
        TracingConfigError,
        ConnectionSettingsError,
    ) as exc:
        print(f"landed worker {role.value}: {exc}", file=sys.stderr)
        raise typer.Exit(3) from None
    except SettingsError as exc:
        # pydantic-settings names the variable; the value it could not parse is not shown.
        first = (str(exc).splitlines() or ["invalid settings"])[0]
        print(f"landed worker {role.value}: invalid settings: {first}", file=sys.stderr)
        raise typer.Exit(3) from None
    except ValidationError as exc:
        # Field names and what is wrong, never the values: a source URL or credential given
        # there would otherwise land in the role's log (and `landed dev` prints its tail).
        print(
            f"landed worker {role.value}: invalid settings: {settings_problems(exc)}",
            file=sys.stderr,
        )
        raise typer.Exit(3) from None
    except RuntimeError as exc:
        # Connection failures surface as RuntimeError from the SDK's core.
        where = f"--address {address}" if address else "TEMPORAL_ADDRESS (or localhost:7233)"
        print(
            f"landed worker {role.value}: {exc}; is Temporal running at {where} (`landed dev` "
            "starts one), and are its TLS, API key and header settings valid?",
            file=sys.stderr,
        )
        raise typer.Exit(1) from None
