"""``landed dev``: the embedded default, Temporal's dev server and the three roles, one command."""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from landed.cli.out import fail
from landed.cli.root import app
from landed.cli.signals import stop_requested

if TYPE_CHECKING:
    from landed.dev.stack import DevStack
    from landed.telemetry.exporter import Exporter


def _or_free(port: int, what: str) -> int:
    """``port`` when nothing holds it on 127.0.0.1, else 0: a free port, printed once up."""
    if port == 0:
        return 0
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        if sys.platform == "linux":
            # As the server binds (Go sets SO_REUSEADDR): a connection of the last run still in
            # TIME_WAIT does not hold the port, a listener does. Only on Linux: elsewhere the
            # option lets a bind share a port another socket listens on.
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            print(
                f"landed dev: {what} port {port} is taken; using a free port (printed below)",
                file=sys.stderr,
            )
            return 0
    return port


def otlp_env(url: str | None, protocol: str) -> dict[str, dict[str, str]]:
    """Each role's OTEL_* variables for ``--otlp URL``: the endpoint, the protocol and its own
    service name (landed-actor, landed-verifier, landed-runner). None: no tracing."""
    from landed.dev.server import DevError
    from landed.telemetry.tracing import PROTOCOLS

    if url is None:
        return {}
    if not url.startswith(("http://", "https://")):
        raise DevError(
            f"--otlp {url!r} is not an http(s) URL; give one such as http://127.0.0.1:4318"
        )
    if protocol not in PROTOCOLS:
        raise DevError(f"--otlp-protocol {protocol!r} is not one of {', '.join(PROTOCOLS)}")
    return {
        role: {
            "OTEL_EXPORTER_OTLP_ENDPOINT": url,
            "OTEL_EXPORTER_OTLP_PROTOCOL": protocol,
            "OTEL_SERVICE_NAME": f"landed-{role}",
        }
        for role in ("actor", "verifier", "runner")
    }


#: The roles' metrics ports deploy/prometheus/prometheus.yml scrapes (beside the exporter's 9464).
METRICS_PORTS = {"actor": 9465, "verifier": 9466, "runner": 9467}


def metrics_env(env: dict[str, dict[str, str]]) -> dict[str, dict[str, str]]:
    """``env`` with each role's metrics port, the one the shipped Prometheus config scrapes, or
    a free one when it is taken; a LANDED_<ROLE>_METRICS_PORT of the caller's wins."""
    import os

    from landed.dev.server import free_port

    merged = {role: dict(env.get(role, {})) for role in ("actor", "verifier", "runner")}
    for role, default in METRICS_PORTS.items():
        name = f"LANDED_{role.upper()}_METRICS_PORT"
        if name not in os.environ:
            chosen = _or_free(default, f"{role} metrics")
            merged[role][name] = str(chosen or free_port())
    return merged


async def _exporter(stack: DevStack, info: dict[str, Any]) -> Exporter:
    """The scorecard exporter on the stack's ledger: LANDED_EXPORTER__PORT, else 9464, else a
    free port (printed)."""
    from landed.telemetry.exporter import serve_beside
    from landed.telemetry.settings import ExporterSettings

    port = _or_free(ExporterSettings().port, "scorecard exporter")
    # The runner's own URL: the one it reports has its credentials taken out.
    ledger_url = stack.role_environment("runner")["LANDED_RUNNER_LEDGER_URL"]
    keys = [Path(info["head_keys"])] if info.get("head_keys") else None
    return await serve_beside(ledger_url, info["web_ui"], port, keys)


def _say_reload(as_json: bool) -> Callable[[dict[str, Any]], None]:
    """How ``--reload`` reports each restart: one line naming the role and why, JSON under
    --json."""

    def say(event: dict[str, Any]) -> None:
        if as_json:
            print(json.dumps(event), flush=True)
        elif event["event"] == "reloaded":
            print(
                f"landed dev: reloaded the {event['role']} ({event['why']}), pid {event['pid']}",
                flush=True,
            )
        else:
            print(f"landed dev: {event['message']}", file=sys.stderr, flush=True)

    return say


async def _serve(
    stack: DevStack, logs: str, stop: asyncio.Event, as_json: bool, reload: bool
) -> int:
    """Run until asked to stop (0) or a process dies (1); with ``reload``, the actor restarts
    when an act module changes and each role whose part of landed.toml changes restarts; a
    role that failed to start after a change waits for the next one instead of stopping the
    stack."""
    from landed.dev.reload import ActReloader
    from landed.dev.reload_settings import SettingsReloader

    say = _say_reload(as_json)
    acts = ActReloader(stack, say).prepare() if reload else None
    settings = SettingsReloader(stack, say).prepare() if reload else None
    watching = [asyncio.ensure_future(r.run()) for r in (acts, settings) if r is not None]
    try:
        while not stop.is_set():
            held = set(settings.holding) if settings is not None else set()
            held |= {"actor"} if acts is not None and acts.holds_actor else set()
            dead = stack.dead_role(ignore=held)
            for watch in watching:
                if dead is None and watch.done():
                    watch.result()  # the watch failed: say why
            if dead is not None:
                message = f"{dead} exited unexpectedly; stopping (see {logs})"
                print(f"landed dev: {message}", file=sys.stderr)
                if as_json:
                    print(json.dumps({"event": "exited", "role": dead, "message": message}))
                return 1
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), timeout=1.0)
        return 0
    finally:
        for reloader in (acts, settings):
            if reloader is not None:
                reloader.stop()
        for watch in watching:
            # A restart in progress may finish first; a stop is not held up longer than this.
            with contextlib.suppress(Exception, asyncio.CancelledError):
                await asyncio.wait_for(watch, timeout=10.0)


async def _run_dev(
    home: Path,
    in_memory: bool,
    headless: bool,
    port: int,
    ui_port: int,
    as_json: bool,
    otlp: dict[str, dict[str, str]],
    reload: bool = False,
) -> int:
    from landed.dev.stack import DevStack

    # Temporal's own ports by default, so `landed submit` and the `temporal` CLI find the
    # server without TEMPORAL_ADDRESS; a port already taken falls back to a free one.
    port = _or_free(port, "Temporal frontend")
    ui_port = 0 if headless else _or_free(ui_port, "Web UI")
    stack = DevStack(
        home=home,
        in_memory=in_memory,
        headless=headless,
        port=port,
        ui_port=ui_port,
        env=metrics_env(otlp),
    )
    with stop_requested() as stop:
        # Ctrl-C or SIGTERM while the stack starts stops it there, not once all is up.
        starting = asyncio.ensure_future(stack.start())
        stopping = asyncio.ensure_future(stop.wait())
        await asyncio.wait({starting, stopping}, return_when=asyncio.FIRST_COMPLETED)
        stopping.cancel()
        if not starting.done():
            starting.cancel()  # DevStack.start stops what it started
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await starting
            print("landed dev: stopped before it was ready", file=sys.stderr, flush=True)
            return 0
        starting.result()  # a start that failed raises here
        status = 0
        exporter = None
        try:
            info = stack.addresses()
            exporter = await _exporter(stack, info)
            info["exporter"] = exporter.url
            if as_json:
                traces = {"otlp": otlp["runner"]["OTEL_EXPORTER_OTLP_ENDPOINT"]} if otlp else {}
                print(json.dumps({"event": "ready", **info, **traces}), flush=True)
            else:
                print(f"Temporal frontend  {info['temporal']} (namespace {info['namespace']})")
                print(f"Temporal Web UI    {info['web_ui'] or 'off (--headless)'}")
                print(f"Temporal metrics   {info['temporal_metrics']}")
                print(f"Temporal database  {info['db'] or 'in memory'}")
                print(f"Outcome ledger     {info['ledger']}")
                print(f"Scorecard          {info['exporter']} (metrics: {info['exporter']}metrics)")
                print(f"Ledger head keys   {info['head_keys']} (landed ledger verify --trust)")
                print(f"Worker logs        {info['logs']}")
                if otlp:
                    sent = otlp["runner"]
                    print(
                        f"Traces (OTLP)      {sent['OTEL_EXPORTER_OTLP_ENDPOINT']} "
                        f"({sent['OTEL_EXPORTER_OTLP_PROTOCOL']})"
                    )
                for role, w in info["workers"].items():
                    print(
                        f"{role:<8} pid {w['pid']:<7} queue {w['task_queue']:<16} {w['identity']}"
                        + (f"  metrics {w['metrics']}" if w.get("metrics") else "")
                    )
                print(f"Submit tasks: TEMPORAL_ADDRESS={info['temporal']} landed submit task.json")
                print("Ctrl-C stops everything.", flush=True)
            status = await _serve(stack, info["logs"], stop, as_json, reload)
        finally:
            if exporter is not None:
                await exporter.stop()
            await asyncio.to_thread(stack.stop)
        if not as_json:
            print("landed dev: stopped", flush=True)
    return status


@app.command("dev")
def dev(
    home: Path = typer.Option(
        Path(".landed"), "--dir", help="Where the Temporal db, ledger, keys and logs live."
    ),
    in_memory: bool = typer.Option(False, help="Keep Temporal's state in memory (lost on stop)."),
    headless: bool = typer.Option(False, help="Do not start the Web UI."),
    port: int = typer.Option(
        7233, help="Temporal frontend port; a free one if taken, 0 for any free port."
    ),
    ui_port: int = typer.Option(8233, help="Web UI port; a free one if taken, 0 for any."),
    as_json: bool = typer.Option(False, "--json", help="Print the addresses as one JSON line."),
    otlp: str | None = typer.Option(
        None,
        "--otlp",
        help="Send the three roles' traces to this OTLP endpoint (e.g. http://127.0.0.1:4318).",
    ),
    otlp_protocol: str = typer.Option(
        "http/protobuf", "--otlp-protocol", help="http/protobuf (port 4318) or grpc (4317)."
    ),
    reload: bool = typer.Option(
        False,
        "--reload",
        help="Restart the actor (only the actor) when an act module of LANDED_ACTOR_ACTS "
        "changes on disk, and each role whose part of ./landed.toml changes; one line per "
        "reload.",
    ),
) -> None:
    """Start Temporal's dev server (SQLite under --dir, WAL, 127.0.0.1) and the actor, verifier
    and runner as separate processes; print every address; stop all on Ctrl-C or SIGTERM.

    The actor inherits only what a process needs to run (PATH, USER, LOGNAME, SHELL, locale,
    TZ, TERM, NO_COLOR, temp dir, VIRTUAL_ENV, LD_LIBRARY_PATH, CA bundles, CPython's PYTHON*
    settings) plus its LANDED_ACTOR_* and the variables named in LANDED_ACTOR_PASS_ENV
    (comma-separated); its HOME is <dir>/actor unless HOME is named.
    No role reads your Temporal profile file.

    With --reload, a change to an act module named in LANDED_ACTOR_ACTS (a package: any .py
    file in it) restarts the actor alone, once its acts in flight finish; the next task runs
    the changed act. A landed.toml in the folder landed dev starts in is watched too: a
    change to its sources (or the rest of the verifier's part) restarts the verifier, to its
    [actor] table (acts, credentials) the actor, to its [runner] table the runner; no other
    role restarts. Each reload prints one line naming the role and why ({"event": "reloaded"}
    under --json); a role that fails to start after a change says why and waits for the next
    save.

    landed.toml's [actor] and [runner] tables are those roles' settings (keys without the
    LANDED_ACTOR_ / LANDED_RUNNER_ prefix; the shell's variables win); each role is given only
    its own part.

    Exit codes: 0 stopped on request; 1 a process died; 3 could not start (message names why;
    under --json also as one {"error", "message"} object on stdout).
    """
    from landed.dev.server import DevError

    try:
        env = otlp_env(otlp, otlp_protocol)
        status = asyncio.run(
            _run_dev(home, in_memory, headless, port, ui_port, as_json, env, reload)
        )
    except DevError as exc:
        raise fail(f"landed dev: {exc}", 3, json_error="start" if as_json else None) from None
    except OSError as exc:  # the --dir cannot hold what the stack writes (a file where a
        # directory goes, no permission, a full disk)
        raise fail(
            f"landed dev: could not start: {exc}; check --dir {home}",
            3,
            json_error="start" if as_json else None,
        ) from None
    raise typer.Exit(status)
