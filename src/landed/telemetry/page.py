"""The exporter's one page: the scorecard, the last settled tasks, the open holds and repairs.

Plain HTML and a little CSS, no script. Every value that came from the ledger (task ids,
owners, verdicts, loops) is escaped, and links into the Temporal Web UI are built from
percent-encoded path parts, so a task id cannot inject markup or change where a link points.
"""

from __future__ import annotations

import html
from collections.abc import Iterable
from urllib.parse import quote

from landed.receipts.scorecard import format_money, format_rate
from landed.telemetry.aggregate import Board, Settled

__all__ = ["render_page", "totals", "workflow_link"]

_STYLE = """body{font:14px system-ui,sans-serif;margin:2em;color:#222}
table{border-collapse:collapse;margin:.5em 0 1.5em}td,th{border:1px solid #ccc;padding:.3em .6em;
text-align:left}th{background:#f3f3f3}.down{color:#b00;font-weight:bold}.num{text-align:right}"""


def totals(board: Board) -> dict[str, float]:
    """The fleet-wide figures of the scorecard, summed over every owner and loop."""

    def total(name: str) -> float:
        return float(sum(board.counts.get(name, {}).values()))

    settled = total("landed_tasks_settled_total")
    claimed, proven = total("landed_done_claimed_total"), total("landed_done_proven_total")
    cost = sum(v for k, v in board.cost.items())
    return {
        "settled": settled,
        "done_claimed": claimed,
        "done_proven": proven,
        "held": total("landed_held_total"),
        "blocked": total("landed_blocked_total"),
        "reversals": total("landed_reversals_total"),
        "started": total("landed_tasks_started_total"),
        "cost_usd": cost,
        "revenue_usd": float(sum(board.revenue.values())),
        "rejected": float(board.rejected),
    }


def workflow_link(ui: str, namespace: str, row: Settled) -> str:
    """The task's workflow in the Temporal Web UI (the workflow id is the task id)."""
    path = f"/namespaces/{quote(namespace, safe='')}/workflows/{quote(row.task_id, safe='')}"
    if row.run_id:
        path += f"/{quote(row.run_id, safe='')}"
    return ui.rstrip("/") + path


def _rows(cells: Iterable[Iterable[str]]) -> str:
    return "".join("<tr>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>" for row in cells)


def _task_rows(rows: Iterable[Settled], ui: str, namespace: str) -> str:
    e = html.escape
    return _rows(
        (
            f'<a href="{e(workflow_link(ui, namespace, r))}">{e(r.task_id)}</a>',
            f'<span class="verdict">{e(r.verdict or "(none)")}</span>',
            e(r.owner),
            e(r.loop),
            e(r.settled_at.isoformat() if r.settled_at else ""),
        )
        for r in rows
    )


def render_page(board: Board, *, up: bool, error: str, ui: str, namespace: str) -> str:
    t = totals(board)
    proof_rate = t["done_proven"] / t["done_claimed"] if t["done_claimed"] else None
    hold_rate = t["held"] / t["settled"] if t["settled"] else None
    per_task = t["cost_usd"] / t["done_proven"] if t["done_proven"] else None
    down = f"ledger unreachable: {html.escape(error)} (showing the last good values)"
    status = "ledger readable" if up else f'<span class="down">{down}</span>'

    card = _rows(
        (
            ("settled", f"{t['settled']:,.0f}"),
            ("done claimed", f"{t['done_claimed']:,.0f}"),
            ("done proven (P3+)", f"{t['done_proven']:,.0f}"),
            ("proof rate", format_rate(proof_rate)),
            ("held", f"{t['held']:,.0f}"),
            ("hold rate", format_rate(hold_rate)),
            ("cost", format_money(t["cost_usd"])),
            ("cost per verified task", format_money(per_task)),
            ("verified revenue", format_money(t["revenue_usd"])),
            ("rows rejected (hash mismatch)", f"{t['rejected']:,.0f}"),
        )
    )
    head = "<tr><th>task</th><th>verdict</th><th>owner</th><th>loop</th><th>settled</th></tr>"
    recent = _task_rows(reversed(board.recent), ui, namespace)
    holds = _task_rows(reversed(board.holds.values()), ui, namespace)
    return (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        f"<title>landed scorecard</title><style>{_STYLE}</style></head><body>"
        f'<h1>landed scorecard</h1><p id="status">{status}</p>'
        f'<table id="scorecard">{card}</table>'
        f'<h2>Last settled tasks</h2><table id="recent">{head}{recent}</table>'
        f'<h2>Open holds ({len(board.holds)})</h2><table id="holds">{head}{holds}</table>'
        f'<h2>Open repairs</h2><p id="repairs">{_repairs(board)}</p></body></html>'
    )


def _repairs(board: Board) -> str:
    """Loops whose last trip (a ledger trip event) is not yet repaired: open or held."""
    open_, held = board.tripped.repairs()
    shown = [f"{html.escape(loop or '(none)')}: open" for loop, n in sorted(open_.items()) if n]
    shown += [f"{html.escape(loop or '(none)')}: held" for loop, n in sorted(held.items()) if n]
    return ", ".join(shown) or "none"
