"""``landed pause``, ``landed resume``, ``landed status``: the fleet's kill switch (GOV-4)."""

from __future__ import annotations

import asyncio
import getpass
import json
from typing import Any

import typer

from landed.cli.out import fail
from landed.cli.root import app

_FLEET = typer.Option(
    "landed-fleet",
    "--fleet",
    envvar="LANDED_RUNNER_FLEET_ID",
    help="The switch's workflow id (the runners' LANDED_RUNNER_FLEET_ID).",
)
_ADDRESS = typer.Option(None, help="Temporal host:port (default: TEMPORAL_ADDRESS).")
_NAMESPACE = typer.Option(None, help="Namespace (default: TEMPORAL_NAMESPACE).")
_QUEUE = typer.Option(
    None, "--task-queue", help="The runner's task queue (default LANDED_TASK_QUEUE, landed-runner)."
)
_JSON = typer.Option(False, "--json", help="Print the result as JSON.")


def _who(by: str | None) -> str:
    if by:
        return by
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return "unknown operator"


async def _connect(address: str | None, namespace: str | None, queue: str | None) -> Any:
    from landed.temporal.client import Client

    return await Client.connect(address, namespace=namespace, task_queue=queue)


def _flip(
    paused: bool, by: str, reason: str, fleet: str, conn: tuple[Any, ...], as_json: bool
) -> None:
    from landed.temporal.fleet import flip

    async def run() -> Any:
        client = await _connect(*conn)
        return await flip(
            client.temporal,
            paused=paused,
            by=by,
            reason=reason,
            fleet_id=fleet,
            runner_queue=client.task_queue,
        )

    try:
        result = asyncio.run(run())
    except Exception as exc:
        text = " ".join(str(exc).split())[:300] or type(exc).__name__
        raise fail(
            f"Temporal refused or could not be reached: {text}; check TEMPORAL_ADDRESS and that "
            "the namespace exists",
            1,
            json_error="temporal" if as_json else None,
        ) from None
    word = "paused" if paused else "resumed"
    then = "every act dispatched from now waits" if paused else "acts are dispatched again"
    if as_json:
        print(json.dumps(result.model_dump(mode="json"), indent=2))
    elif result.confirmed:
        typer.echo(f"fleet {fleet} {word} by {by}; {then}")
    else:
        typer.echo(f"fleet {fleet}: {word} recorded, not yet confirmed. {result.note}")
    if not result.confirmed:
        raise typer.Exit(4)


@app.command("pause")
def pause(
    reason: str = typer.Option("", "--reason", help="Why (shown by landed status, receipts)."),
    by: str | None = typer.Option(None, "--by", help="Who pauses (default: your login)."),
    fleet: str = _FLEET,
    address: str | None = _ADDRESS,
    namespace: str | None = _NAMESPACE,
    task_queue: str | None = _QUEUE,
    as_json: bool = _JSON,
) -> None:
    """Pause the fleet: no new act is dispatched anywhere until `landed resume` (GOV-4).

    Acts already running finish; what acted is still verified and settled. A task whose time
    cap runs out while paused settles as blocked, naming the pause; never failed.

    Exit codes: 0 paused, read back by a runner; 4 Temporal recorded the pause but no runner
    read it back within 5 s (it applies when one does; no act starts without a runner);
    1 Temporal refused the request or is unreachable.
    """
    _flip(True, _who(by), reason, fleet, (address, namespace, task_queue), as_json)


@app.command("resume")
def resume(
    reason: str = typer.Option("", "--reason", help="Why."),
    by: str | None = typer.Option(None, "--by", help="Who resumes (default: your login)."),
    fleet: str = _FLEET,
    address: str | None = _ADDRESS,
    namespace: str | None = _NAMESPACE,
    task_queue: str | None = _QUEUE,
    as_json: bool = _JSON,
) -> None:
    """Resume the fleet: tasks waiting at the switch act again.

    Exit codes: 0 resumed, read back by a runner; 4 recorded, not read back within 5 s;
    1 Temporal refused the request or is unreachable.
    """
    _flip(False, _who(by), reason, fleet, (address, namespace, task_queue), as_json)


@app.command("status")
def status(
    fleet: str = _FLEET,
    address: str | None = _ADDRESS,
    namespace: str | None = _NAMESPACE,
    task_queue: str | None = _QUEUE,
    as_json: bool = _JSON,
) -> None:
    """Show the fleet's switch: running or paused, who flipped it, when and why.

    Exit codes: 0 read (running or paused: see the output); 1 the switch could not be read (no
    runner answered, or Temporal is unreachable): treat the fleet as not known to be running.
    """
    from landed.temporal.fleet import read_switch

    async def run() -> Any:
        client = await _connect(address, namespace, task_queue)
        return await read_switch(client.temporal, fleet)

    try:
        read = asyncio.run(run())
    except Exception as exc:
        text = " ".join(str(exc).split())[:300] or type(exc).__name__
        raise fail(
            f"Temporal could not be reached: {text}", 1, json_error="temporal" if as_json else None
        ) from None
    if read.error is not None:
        raise fail(
            f"the fleet switch {fleet} could not be read: {read.error}; is a runner up?",
            1,
            json_error="unreadable" if as_json else None,
        )
    sw = read.switch
    assert sw is not None
    if as_json:
        print(json.dumps(read.model_dump(mode="json"), indent=2))
        return
    state = "PAUSED" if sw.paused else "running"
    if read.pending:
        # A flip Temporal accepted that no runner has applied: gates read it as not running.
        state += " (a flip is recorded but not applied yet: no runner has run it; acts wait)"
    if sw.by is None:
        typer.echo(f"fleet {fleet}: {state} (never flipped)")
    else:
        when = sw.at.isoformat() if sw.at else "?"
        why = f" — {sw.reason}" if sw.reason else ""
        verb = "paused" if sw.paused else "resumed"
        typer.echo(f"fleet {fleet}: {state}, {verb} by {sw.by} at {when}{why}")
    from landed.cli.fleet_harness import cooling_lines

    for line in cooling_lines(read.harnesses):
        typer.echo(line)
