"""``landed receipt TASK``: one task's receipts as the ledger holds them, for the person on call.

The runbooks send on-call here from an alert: what did the agent claim, what did the verifier
read back, which verdict settled it, and where its workflow is in the Temporal Web UI.
"""

from __future__ import annotations

import asyncio
import os
from typing import Annotated, Any
from urllib.parse import quote

import typer
from rich.markup import escape

from landed.cli.ledger import LedgerOption
from landed.cli.out import emit, fail
from landed.cli.report_console import ReportConsole
from landed.cli.root import app
from landed.ledger.base import LedgerError, canonical_json
from landed.ledger.factory import open_ledger
from landed.receipts.model import Receipt, attempt_of

__all__ = ["receipt"]

EXIT_NOT_FOUND = 1
EXIT_INVALID = 3


async def _rows(url: str | None, task_id: str) -> tuple[str, list[Receipt]]:
    async with await open_ledger(url, create=False) as ledger:
        return ledger.url, await ledger.get(task_id)


def _reading(item: Any) -> str:
    obs = (item.landed or {}).get("observation") or {}
    signed = "signed" if "signature" in (item.landed or {}) else "unsigned"
    return (
        f"{item.kind} {item.ref or '-'}: {item.result or '-'} "
        f"({signed}, by {item.checked_by or '-'}, {obs.get('duration_ms', '-')} ms)"
    )


def _show(where: str, rows: list[Receipt], ui: str, namespace: str) -> None:
    out = ReportConsole(highlight=False)
    first = rows[0]
    out.print(f"task {escape(first.task_id)} in {escape(where)}: {len(rows)} row(s)")
    for r in rows:
        rung = r.landed.rung if r.landed is not None else None
        out.print(
            f"\nattempt {attempt_of(r)}: claimed {escape(r.claimed_status)}, verdict "
            f"{escape(r.verdict or '-')} by {escape(r.verdict_by or '-')} (rung "
            f"{escape(rung or '-')}), settled {r.settled_at.isoformat() if r.settled_at else '-'}"
        )
        if r.owner:
            out.print(f"  owner {escape(r.owner)}")
        if r.report:
            out.print(f"  report: {escape(r.report[:500])}")
        for item in r.proof:
            out.print(f"  proof {escape(_reading(item))}")
    path = f"/namespaces/{quote(namespace, safe='')}/workflows/{quote(first.task_id, safe='')}"
    out.print(f"\nTemporal Web UI: {ui.rstrip('/')}{path}")


@app.command("receipt")
def receipt(
    task_id: Annotated[str, typer.Argument(metavar="TASK", help="The task id.")],
    ledger: LedgerOption = None,
    temporal_ui: Annotated[
        str | None,
        typer.Option(
            "--temporal-ui",
            metavar="URL",
            help="The Web UI the link points at (default: LANDED_WEB_UI, else TEMPORAL_ADDRESS's "
            "port + 1000, as for landed submit --wait).",
        ),
    ] = None,
    namespace: Annotated[
        str | None,
        typer.Option("--namespace", help="The tasks' namespace (default: TEMPORAL_NAMESPACE)."),
    ] = None,
    as_json: Annotated[
        bool, typer.Option("--json", help="Every row of the task, one receipt per line (JSONL).")
    ] = False,
) -> None:
    """Show one task's receipts from the outcome ledger: each attempt's claim, read-backs and
    verdict, oldest first, and the task's page in the Temporal Web UI.

    Exit codes: 0 shown; 1 the ledger holds no receipt of TASK; 3 no ledger there, or it could
    not be read.
    """
    try:
        where, rows = asyncio.run(_rows(ledger, task_id))
    except LedgerError as exc:
        error = "ledger unreadable" if as_json else None
        raise fail(str(exc), EXIT_INVALID, json_error=error) from None
    if not rows:
        raise fail(
            f"no receipt of task {task_id!r} in {where}; `landed board` lists the settled tasks",
            EXIT_NOT_FOUND,
            json_error="not found" if as_json else None,
        )
    if as_json:
        emit(b"".join(canonical_json(r) + b"\n" for r in rows))
        return
    _show(where, rows, temporal_ui or _web_ui(), namespace or _namespace())


def _web_ui() -> str:
    """The Web UI where ``landed submit --wait`` links, for the Temporal address in use."""
    from landed.cli.submit_watch import web_ui_base  # only here: it imports the Temporal SDK

    return web_ui_base(os.environ.get("TEMPORAL_ADDRESS", "").strip() or "127.0.0.1:7233")


def _namespace() -> str:
    return os.environ.get("TEMPORAL_NAMESPACE", "").strip() or "default"
