"""``landed approve``, ``landed reject`` and ``landed held``: a person's side of the approval
gate (GOV-5). An act that cannot be undone waits for one of these."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import typer
from rich.table import Table

from landed.cli.out import fail
from landed.cli.report_console import ReportConsole
from landed.cli.root import app

T = TypeVar("T")

_ADDRESS = typer.Option(None, "--address", help="Temporal host:port (default: TEMPORAL_ADDRESS).")
_NAMESPACE = typer.Option(None, "--namespace", help="Namespace (default: TEMPORAL_NAMESPACE).")
_JSON = typer.Option(False, "--json", help="Print the result as JSON.")
_KEY = typer.Option(
    None,
    "--key",
    envvar="LANDED_APPROVER_KEY",
    help="Your approver key (.key from `landed keys new --role approver --name NAME`); the "
    "decision is signed with it, and the runner must trust its .pub for --by.",
)


def _run(work: Callable[[Any], Awaitable[T]], address: str | None, namespace: str | None) -> T:
    from landed.temporal.client import Client

    async def go() -> T:
        client = await Client.connect(address, namespace=namespace)
        return await work(client)

    return asyncio.run(go())


def _decided(
    task_id: str,
    send: Callable[[Any], Awaitable[Any]],
    address: str | None,
    namespace: str | None,
    as_json: bool,
) -> None:
    from landed.temporal.approvals import ApprovalRefused

    try:
        view = _run(lambda c: send(c.task(task_id)), address, namespace)
    except ApprovalRefused as exc:
        raise fail(str(exc), 3, json_error="refused" if as_json else None) from None
    except Exception as exc:  # Temporal unreachable or refusing: said, not a traceback
        why = f"could not reach Temporal for task {task_id!r}: {exc}"
        raise fail(why, 1, json_error="temporal" if as_json else None) from None
    decision = view.decision
    if as_json:
        typer.echo(json.dumps({"task_id": task_id, **view.model_dump(mode="json")}))
        return
    assert decision is not None
    ReportConsole().print(
        f"task {task_id}: {decision.decision} by {decision.by}", highlight=False, markup=False
    )


@app.command("approve")
def approve(
    task_id: str = typer.Argument(..., help="The task (workflow) id waiting for approval."),
    by: str = typer.Option(..., "--by", help="Who approves: a person, never the task's owner."),
    note: str | None = typer.Option(None, "--note", help="Why; kept on the receipt."),
    key: str | None = _KEY,
    as_json: bool = _JSON,
    address: str | None = _ADDRESS,
    namespace: str | None = _NAMESPACE,
) -> None:
    """Approve a task waiting at its approval gate: it goes on to act, and still needs its
    read-back to be verified (approval is not delivery). The decision is signed with your
    approver key over the task, its run and its spec; the approver, note and signed decision
    go into the receipt.

    Exit codes: 0 approved; 1 Temporal refused the request or is unreachable; 3 the task refused
    the decision (no key or an untrusted one, unknown or settled task, not waiting, already
    decided, the approver is its owner or actor): nothing was recorded.
    """
    _decided(task_id, lambda h: h.approve(by, note, key=key), address, namespace, as_json)


@app.command("reject")
def reject(
    task_id: str = typer.Argument(..., help="The task (workflow) id waiting for approval."),
    by: str = typer.Option(..., "--by", help="Who rejects: a person, never the task's owner."),
    reason: str = typer.Option(..., "--reason", help="Why; kept on the receipt."),
    key: str | None = _KEY,
    as_json: bool = _JSON,
    address: str | None = _ADDRESS,
    namespace: str | None = _NAMESPACE,
) -> None:
    """Reject a task waiting at its approval gate: it settles held, nothing done. Signed with
    your approver key, as an approval is.

    Exit codes: 0 rejected; 1 Temporal refused the request or is unreachable; 3 the task refused
    the decision (no key or an untrusted one, unknown or settled task, not waiting, already
    decided, the approver is its owner or actor): nothing was recorded.
    """
    _decided(task_id, lambda h: h.reject(by, reason, key=key), address, namespace, as_json)


@app.command("held")
def held(
    as_json: bool = _JSON,
    address: str | None = _ADDRESS,
    namespace: str | None = _NAMESPACE,
) -> None:
    """List the tasks waiting at their approval gate, oldest first, with their age and who may
    approve. A task nobody decides on by its approval_timeout settles held (not failed).

    Exit codes: 0 listed (also when nothing waits); 1 Temporal refused the request or is
    unreachable.
    """
    try:
        tasks = _run(lambda c: c.held(), address, namespace)
    except Exception as exc:
        raise fail(
            f"could not list held tasks: {exc}", 1, json_error="temporal" if as_json else None
        ) from None
    if as_json:
        typer.echo(json.dumps([t.model_dump(mode="json") for t in tasks]))
        return
    console = ReportConsole()
    if not tasks:
        console.print("nothing waits for approval", highlight=False)
        return
    table = Table("task", "act", "owner", "waiting", "decide by", "who may approve")
    for t in tasks:
        age = f"{t.age_s:.0f} s" if t.age_s is not None else "?"
        until = t.deadline.isoformat(timespec="seconds") if t.deadline else "?"
        table.add_row(t.task_id, t.kind or "?", t.owner or "?", age, until, t.approvers)
    console.print(table)
