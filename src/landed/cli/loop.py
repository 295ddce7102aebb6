"""``landed loop create|list|describe|pause|resume|delete``, ``landed loops`` and
``landed repair done LOOP``: loops on Temporal Schedules and their tripwires (GOV-9).

Exit codes: 0 done; 2 bad input (an invalid loop, a loop declared twice); 3 unknown loop or
unreadable file; 4 Temporal could not be reached.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import typer
from pydantic import ValidationError

from landed.cli.out import fail
from landed.cli.root import app

loop_app = typer.Typer(help="Recurring agent work on a cadence, each loop with its tripwire.")
repair_app = typer.Typer(help="Repairs queued by a loop's tripwire.")
app.add_typer(loop_app, name="loop")
app.add_typer(repair_app, name="repair")

_JSON = typer.Option(False, "--json", help="Print the result as JSON.")
_ADDRESS = typer.Option(None, "--address", help="Temporal host:port (default TEMPORAL_ADDRESS).")
_QUEUE = typer.Option(None, "--task-queue", help="The runner's task queue.")
_LEDGER = typer.Option(
    None,
    "--ledger",
    metavar="URL",
    help="The ledger whose trip events to show (default: $LANDED_LEDGER_URL, else "
    ".landed/ledger.db).",
)


def _run(
    work: Callable[[Any], Awaitable[Any]], address: str | None, queue: str | None, as_json: bool
) -> Any:
    from landed.temporal.client import Client
    from landed.temporal.loops import LoopExists, UnknownLoop

    async def go() -> Any:
        client = await Client.connect(address, task_queue=queue)
        return await work(client)

    try:
        return asyncio.run(go())
    except LoopExists as exc:
        raise fail(str(exc), 2, json_error="loop exists" if as_json else None) from None
    except UnknownLoop as exc:
        raise fail(str(exc), 3, json_error="unknown loop" if as_json else None) from None
    except (OSError, RuntimeError) as exc:
        why = f"could not reach Temporal ({exc}); start it (`landed dev`) or set --address"
        raise fail(why, 4, json_error="temporal unreachable" if as_json else None) from None


def _show(data: Any, as_json: bool, text: str) -> None:
    print(json.dumps(data, indent=2, default=str) if as_json else text)
    sys.stdout.flush()


def _recorded(url: str | None, loops: list[str]) -> dict[str, Any]:
    """Each loop's last trip as the ledger's append-only event holds it (None: the ledger
    records no trip of it); a ledger that cannot be read says so, never "no trip"."""
    from landed.ledger.base import LedgerError
    from landed.ledger.factory import open_ledger
    from landed.task.names import TRIP_EVENT

    async def read() -> dict[str, Any]:
        out: dict[str, Any] = {}
        async with await open_ledger(url, create=False) as ledger:
            for loop in loops:
                trips = [e for e in await ledger.events(loop, limit=20) if e.kind == TRIP_EVENT]
                out[loop] = trips[0].body | {"event": trips[0].key} if trips else None
        return out

    try:
        return asyncio.run(read())
    except LedgerError as exc:
        return {loop: {"error": f"the ledger could not be read: {exc}"} for loop in loops}


def _spec(name: str, every: str, task_file: Path, tripwire: str | None, as_json: bool) -> Any:
    from landed.loops.spec import LoopSpec

    try:
        task = json.loads(task_file.read_bytes()[: 1 << 20])
        extra = json.loads(tripwire) if tripwire else {}
    except (OSError, ValueError) as exc:
        raise fail(
            f"cannot read {task_file} or --tripwire as JSON ({exc}); give a JSON task "
            "template without task_id",
            3,
            json_error="unreadable" if as_json else None,
        ) from None
    repair = task.pop("repair", None) if isinstance(task, dict) else None
    units = {"m": "M", "h": "H", "d": "D", "s": "S"}
    iso = (
        every
        if every.startswith("P")
        else (
            f"P{every[:-1]}D"
            if every.endswith("d")
            else f"PT{every[:-1]}{units.get(every[-1], '?')}"
        )
    )
    try:
        return LoopSpec.model_validate(
            {"name": name, "every": iso, "task": task, "tripwire": extra, "repair": repair}
        )
    except ValidationError as exc:
        why = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
        raise fail(
            f"invalid loop: {why}", 2, json_error="invalid loop" if as_json else None
        ) from None


@loop_app.command("create")
def create(
    name: str = typer.Argument(..., help="The loop's name (lowercase, digits, dashes)."),
    every: str = typer.Option(..., "--every", help="Cadence: 15m, 1h, 1d or ISO 8601."),
    task: Path = typer.Option(
        ...,
        "--task",
        help="TaskSpec template JSON (no task_id; an optional `repair` key declares the repair).",
    ),
    tripwire: str | None = typer.Option(
        None,
        "--tripwire",
        help='Rules as JSON, e.g. \'{"not_done_in_a_row": 2, "proof_floor": 0.8}\'.',
    ),
    paused: bool = typer.Option(False, "--paused", help="Create the Schedule paused."),
    address: str | None = _ADDRESS,
    task_queue: str | None = _QUEUE,
    as_json: bool = _JSON,
) -> None:
    """Create a loop: a Schedule starting its task every cadence, and its tripwire."""
    spec = _spec(name, every, task, tripwire, as_json)

    async def work(client: Any) -> None:
        await client.create_loop(spec, paused=paused)

    _run(work, address, task_queue, as_json)
    _show({"loop": name, "created": True}, as_json, f"loop {name} created (every {every})")


def _schedule_cmd(action: str) -> Callable[..., None]:
    def command(
        name: str = typer.Argument(...),
        address: str | None = _ADDRESS,
        task_queue: str | None = _QUEUE,
        as_json: bool = _JSON,
    ) -> None:
        from landed.temporal.loops import delete_loop, describe_loop, schedule_action

        async def work(client: Any) -> Any:
            if action == "delete":
                return await delete_loop(client.temporal, name)
            if action == "describe":
                return await describe_loop(client.temporal, name)
            return await schedule_action(client.temporal, name, action)

        out = _run(work, address, task_queue, as_json)
        _show(out, as_json, json.dumps(out, indent=2, default=str))

    command.__doc__ = f"{action.capitalize()} a loop (its Schedule and tripwire)."
    return command


for _action in ("pause", "resume", "delete"):
    loop_app.command(_action)(_schedule_cmd(_action))


@loop_app.command("describe")
def describe(
    name: str = typer.Argument(...),
    address: str | None = _ADDRESS,
    task_queue: str | None = _QUEUE,
    ledger: str | None = _LEDGER,
    as_json: bool = _JSON,
) -> None:
    """A loop's Schedule, its tripwire's state and its last trip as the ledger recorded it."""
    from landed.temporal.loops import describe_loop

    out = _run(lambda c: describe_loop(c.temporal, name), address, task_queue, as_json)
    out["recorded_trip"] = _recorded(ledger, [name])[name]
    _show(out, as_json, json.dumps(out, indent=2, default=str))


@loop_app.command("list")
def list_loops(
    address: str | None = _ADDRESS,
    task_queue: str | None = _QUEUE,
    ledger: str | None = _LEDGER,
    as_json: bool = _JSON,
) -> None:
    """Every loop with a running tripwire and its state."""
    loops_(address, task_queue, ledger, as_json)


@app.command("loops")
def loops_(
    address: str | None = _ADDRESS,
    task_queue: str | None = _QUEUE,
    ledger: str | None = _LEDGER,
    as_json: bool = _JSON,
) -> None:
    """Each loop's state: healthy, tripped, repairing, held; its last trip (on the tripwire
    and as the ledger recorded it) and open repair."""
    from landed.temporal.loops import loop_states

    states = _run(lambda c: loop_states(c.temporal), address, task_queue, as_json)
    recorded = _recorded(ledger, [s.loop for s in states]) if states else {}
    rows = [
        {
            "loop": s.loop,
            "state": s.phase,
            "last_trip": s.last_trip.model_dump(mode="json") if s.last_trip else None,
            "open_repair": s.repair_task_id if s.phase == "repairing" else None,
            "repairs_verified": s.repairs_verified,
            "recorded_trip": recorded.get(s.loop),
        }
        for s in states
    ]
    lines = [
        f"{r['loop']:<24} {r['state']:<10} last trip: "
        f"{(r['last_trip'] or {}).get('rule', '-')}  open repair: {r['open_repair'] or '-'}"
        for r in rows
    ]
    _show(rows, as_json, "\n".join(lines) or "no loops")


@repair_app.command("done")
def repair_done_(
    name: str = typer.Argument(...),
    by: str = typer.Option("a person", "--by", help="Who did the repair."),
    address: str | None = _ADDRESS,
    task_queue: str | None = _QUEUE,
    as_json: bool = _JSON,
) -> None:
    """A person did the held repair: its repair task reads the loop back like any task."""
    from landed.temporal.loops import repair_done

    state = _run(lambda c: repair_done(c.temporal, name, by), address, task_queue, as_json)
    _show({"loop": name, "was": state.phase}, as_json, f"loop {name}: repair read back next")
