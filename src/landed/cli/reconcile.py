"""``landed reconcile FILE|-`` and ``--follow FILE``: verify a stream of claims, one
VerifyClaim per line, from agents that act outside Temporal."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn

from landed.cli.out import fail
from landed.cli.root import app

if TYPE_CHECKING:
    from landed.cli.reconcile_tail import Offset

__all__ = ["reconcile_command"]


@app.command("reconcile")
def reconcile_command(
    stream: str = typer.Argument(..., help="A JSONL file of claims, or '-' for stdin."),
    follow: bool = typer.Option(
        False, "--follow", "-F", help="Follow the file as it grows (tail -F): survives rotation."
    ),
    state: Path | None = typer.Option(
        None, help="With --follow: where the committed offset is kept (default FILE.landed-offset)."
    ),
    concurrency: int = typer.Option(32, min=1, max=2000, help="Claims in flight at most."),
    until_idle: float | None = typer.Option(
        None,
        "--until-idle",
        min=0.0,
        help="With --follow: stop once every claim settled and the file stayed quiet this long.",
    ),
    contracts: Path | None = typer.Option(
        None,
        "--contracts",
        help="The operator's claim contracts (JSON), as the runner holds them "
        "(LANDED_RUNNER_CLAIM_CONTRACTS): linted first; each claim's outcome class and params "
        "checked before it starts, and pinned to this file.",
    ),
    max_line: int = typer.Option(256 << 10, min=1024, max=1 << 20, help="Longest line, bytes."),
    as_json: bool = typer.Option(False, "--json", help="One JSON object per event on stdout."),
    address: str | None = typer.Option(None, help="Temporal host:port (default TEMPORAL_ADDRESS)."),
    namespace: str | None = typer.Option(None, help="Namespace (default TEMPORAL_NAMESPACE)."),
    task_queue: str | None = typer.Option(None, help="The runner's task queue (landed-runner)."),
) -> None:
    """Read back every claim in a JSONL stream and settle each one's verdict in the ledger.

    Each line is a claim: a DoD receipt, a loose log line ({"task_id": ..., "claimed_status":
    "done"}) or a contract ({"kind": "contract", "outcome": "orders.created", "params":
    {"batch": "b-17", "count": 3}}). A claim that names an outcome class with params is read
    back by the contract the operator declared for that class (the runner's
    LANDED_RUNNER_CLAIM_CONTRACTS): only such a claim can settle done. A claim that brings its
    own proof_plan settles at most P2 (the check is the claimant's); one with neither, or of an
    unknown kind, at the level its own evidence proves. One VerifyClaim per task id and
    attempt: a stream read twice verifies nothing twice. Bad lines are reported with their
    number and skipped.

    With --follow, the offset of the last line started is kept in a state file, and a restart
    resumes there.

    Exit codes: 0 every claim settled verified (or reconciled); 1 a claim settled not verified,
    or its workflow failed or could not start; 2 usage error; 3 bad lines in the stream (the
    others were still reconciled), an unreadable stream or state file, or a --contracts file
    that is invalid or holds a contract a bad write would pass; 130 interrupted
    (claims already started run on, and a restart attaches to them).
    """
    from landed.cli.reconcile_tail import Tail

    path = None if stream == "-" else Path(stream)
    state_file, resume = _resume_point(stream, path, follow, state, as_json)
    judge = _contracts(contracts, as_json)
    tail = Tail(path, max_line=max_line, follow=follow, resume=resume, idle=until_idle)
    try:
        tally = asyncio.run(
            _run(tail, state_file, concurrency, as_json, address, namespace, task_queue, judge)
        )
    except KeyboardInterrupt:
        raise fail(
            "interrupted; claims already started run on, and a restart attaches to them",
            130,
            json_error="interrupted" if as_json else None,
        ) from None
    except (RuntimeError, OSError) as exc:
        raise fail(
            f"cannot reach Temporal ({exc}); start it with `landed dev` or set TEMPORAL_ADDRESS",
            1,
            json_error="Temporal unreachable" if as_json else None,
        ) from None
    if tally.not_verified or tally.failed:
        raise typer.Exit(1)
    if tally.invalid:
        raise typer.Exit(3)


def _resume_point(
    stream: str, path: Path | None, follow: bool, state: Path | None, as_json: bool
) -> tuple[Path | None, Offset | None]:
    """Where --follow keeps its committed offset, and the offset to resume from; the stream's
    file must be there (exit 2 for --follow on stdin, 3 for a file or state that is unreadable)."""
    from landed.cli.reconcile_tail import load_offset, state_path_for

    if follow and path is None:
        raise fail(
            "--follow needs a file, not stdin; give the path of the JSONL file",
            2,
            json_error="usage" if as_json else None,
        )
    state_file = (state or state_path_for(path)) if follow and path is not None else None
    try:
        resume = load_offset(state_file) if state_file is not None else None
        if path is not None:
            path.stat()
    except (ValueError, OSError) as exc:
        why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise fail(
            f"cannot read {stream}: {why}", 3, json_error="unreadable stream" if as_json else None
        ) from None
    return state_file, resume


def _contracts(path: Path | None, as_json: bool) -> Any:
    """The operator's claim contracts, linted, or exit 3 naming the contract and the write."""
    if path is None:
        return None
    from landed.task.claim_contracts import ContractsError
    from landed.task.claim_contracts_lint import load_claim_contracts

    try:
        return load_claim_contracts(path)
    except ContractsError as exc:
        raise fail(str(exc), 3, json_error="invalid contracts" if as_json else None) from None


# Bad lines are named one by one up to this many; the rest only count in the summary.
INVALID_SHOWN = 20
_MORE = f"(further invalid lines are counted in the summary, not printed; first {INVALID_SHOWN})"


async def _run(
    tail: Any,
    state: Path | None,
    concurrency: int,
    as_json: bool,
    address: str | None,
    namespace: str | None,
    task_queue: str | None,
    contracts: Any,
) -> Any:
    from landed.cli.reconcile_run import reconcile
    from landed.temporal.client import Client
    from landed.temporal.settings import DEFAULT_RUNNER_QUEUE

    queue = task_queue or os.environ.get("LANDED_TASK_QUEUE") or DEFAULT_RUNNER_QUEUE
    client = await Client.connect(address, namespace=namespace, task_queue=queue)
    err = Console(stderr=True, soft_wrap=True, emoji=False, highlight=False)
    progress = Progress(
        SpinnerColumn(),
        TextColumn("[bold]reconcile[/bold] {task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        console=err,
        disable=not err.is_terminal,
    )
    bar = progress.add_task("claims", total=0)
    seen = [0, 0]
    invalid = [0]

    def emit(event: dict[str, Any]) -> None:
        kind = event["event"]
        if kind == "settled" or kind == "invalid" or kind == "failed":
            seen[1] += 1
        if kind != "notice":
            seen[0] += 1
        progress.update(bar, total=seen[0], completed=seen[1])
        if kind == "invalid":
            invalid[0] += 1
            if invalid[0] > INVALID_SHOWN:
                return  # counted in the summary; a file of junk must not print a file of errors
            if invalid[0] == INVALID_SHOWN:
                event = {**event, "message": f"{event['message']} {_MORE}"}
        if as_json:
            print(json.dumps({k: v for k, v in event.items()}), flush=True)
        _say(err, event, quiet=as_json)

    with progress:
        tally = await reconcile(
            client.temporal,
            tail,
            task_queue=queue,
            concurrency=concurrency,
            emit=emit,
            state=state,
            contracts=contracts,
        )
    summary = tally.as_dict()
    if as_json:
        print(json.dumps({"event": "summary", **summary}), flush=True)
    else:
        err.print(", ".join(f"{k.replace('_', ' ')} {v}" for k, v in summary.items()))
    sys.stdout.flush()
    return tally


def _say(err: Console, event: dict[str, Any], *, quiet: bool) -> None:
    """Bad lines and failures always go to stderr; settled claims only without --json."""
    kind = event["event"]
    if kind == "invalid":
        err.print(f"[red]line {event['line']}[/red]: {escape(event['message'])}")
    elif kind == "failed":
        err.print(
            f"[red]line {event['line']}[/red] {escape(event['task_id'])}: "
            f"{escape(event['message'])}"
        )
    elif kind == "notice":
        err.print(f"[yellow]{escape(event['message'])}[/yellow]")
    elif not quiet:
        again = " (already reconciled)" if event["existing"] else ""
        extra = f" [red]{escape(event['conflict'])}[/red]" if "conflict" in event else ""
        print(
            f"line {event['line']}: {event['task_id']} attempt {event['attempt']}: "
            f"{'DONE' if event['done'] else 'NOT DONE'} ({event['verdict']}){again}{extra}",
            flush=True,
        )
