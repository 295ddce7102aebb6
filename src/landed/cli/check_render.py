"""The text view of ``landed check``: the per-task table, the invalid lines, the scorecard and
the summary line, with user text shown as plain characters."""

from __future__ import annotations

from typing import Final

from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from landed.cli.check_sinks import EXIT_INVALID, EXIT_MISSED, EXIT_OK, CheckReport
from landed.receipts.scorecard import Scorecard, format_money, format_rate

__all__ = ["render_text"]


def _clip(text: str, limit: int = 48) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "\u2026"


# Control characters (C0, DEL, C1) and bidi overrides in text from a receipt would reach the
# terminal raw (an ESC clears the screen, a bidi override reverses the text): show them escaped.
_CONTROLS: Final = {
    c: f"\\x{c:02x}" if c < 0x100 else f"\\u{c:04x}"
    for c in (*range(0x20), *range(0x7F, 0xA0), *range(0x202A, 0x202F), *range(0x2066, 0x206A))
}


def _safe(text: str) -> str:
    """User text as plain, visible characters (no control characters)."""
    return text.translate(_CONTROLS)


def _cell(text: str, limit: int = 48) -> Text:
    """A table cell holding user text: never read as rich markup ("[/]" is a task id too)."""
    return Text(_clip(_safe(text), limit))


def render_text(report: CheckReport, scorecard: Scorecard, console: Console) -> None:
    """The per-task table, the invalid lines, the scorecard and a one-line summary."""
    if report.rows:
        table = Table(title=Text(f"landed check: {_safe(report.file)}"), title_justify="left")
        table.add_column("line", justify="right", style="dim")
        table.add_column("task", overflow="fold")
        table.add_column("claimed", overflow="fold")
        table.add_column("proven", no_wrap=True)
        table.add_column("done", justify="center", no_wrap=True)
        table.add_column("findings by rule", overflow="fold")
        for line, task_id, claimed, graded in report.rows:
            if not graded.claims_done:
                bar = "[dim]no claim[/dim]"
            else:
                # a claim of done is DONE only when its proof meets the bar its action requires
                bar = "[green]DONE[/green]" if graded.meets_bar else "[bold red]NOT DONE[/bold red]"
            rules = " ".join(dict.fromkeys(rule for rule, _ in graded.findings)) or "-"
            proven = f"{graded.proof_level.label} {graded.proven_status.value}"
            table.add_row(str(line), _cell(task_id), _cell(claimed, 24), proven, bar, rules)
        console.print(table)
        explained = [row for row in report.rows if row[3].findings]
        if explained:
            console.print("[bold]findings[/bold]")
        for line, task_id, _claimed, graded in explained:
            console.print(f"  {_safe(task_id)} (line {line})", markup=False, highlight=False)
            for rule, message in graded.findings:
                console.print(
                    f"    {rule:<6} {_safe(message)}", markup=False, highlight=False, soft_wrap=True
                )
        if explained:
            console.print("  (landed explain RULE says what a rule means)", highlight=False)
    if report.hidden_tasks:
        console.print(
            f"... {report.hidden_tasks:,} more task(s) not shown, {report.hidden_missed:,} of "
            "them missing the bar; --json lists every task, --max-rows shows more"
        )
    whole = [item for item in report.invalid_rows if not item.line]
    # Nothing could be read at all (no file, an empty one): no lines, and no scorecard of
    # zeros that would read like a result.
    unread = bool(whole) and report.invalid_count == len(whole)
    if unread:
        for item in whole:
            console.print(
                f"[bold red]not scored[/bold red]: {escape(_safe(report.file))}: "
                f"{escape(_safe(item.reason))}",
                highlight=False,
                soft_wrap=True,
            )
    elif report.invalid_count:
        console.print(
            f"[bold red]{report.invalid_count:,} invalid line(s)[/bold red] (not scored):"
        )
        for item in report.invalid_rows:
            where = f"{report.file}:{item.line}" if item.line else report.file
            console.print(
                f"  {_safe(where)}: {_safe(item.reason)}",
                markup=False,
                highlight=False,
                soft_wrap=True,
            )
        if report.invalid_count > len(report.invalid_rows):
            console.print(f"  ... and {report.invalid_count - len(report.invalid_rows):,} more")
    if not unread:
        _render_scorecard(scorecard, console)
    verdicts = {
        EXIT_OK: "[green]every done claim meets its bar[/green]",
        EXIT_MISSED: f"[bold red]{report.missed_count:,} done claim(s) miss the bar[/bold red]",
        EXIT_INVALID: "[bold red]invalid input[/bold red]",
    }
    console.print(f"{verdicts[report.exit_code]} (exit {report.exit_code})")


def _render_scorecard(card: Scorecard, console: Console) -> None:
    table = Table(title="governance scorecard", title_justify="left", show_header=False)
    table.add_column("metric")
    table.add_column("value", justify="right")
    table.add_column("from", style="dim")
    table.add_row(
        "proof rate",
        format_rate(card.proof_rate),
        f"{card.done_proven:,} of {card.done_claimed:,} done claims at P3+",
    )
    table.add_row(
        "hold rate", format_rate(card.hold_rate), f"{card.held:,} held of {card.settled:,}"
    )
    table.add_row(
        "cost per verified task",
        format_money(card.cost_per_verified_task),
        f"{format_money(card.cost_usd)} over {card.done_proven:,} verified "
        f"({card.cost_logged:,} of {card.settled:,} receipts log cost)",
    )
    table.add_row("verified revenue", format_money(card.verified_revenue_usd), "P4 receipts only")
    table.add_row(
        "reversals", f"{card.reversed:,}", "verified outcomes a recheck found no longer holding"
    )
    console.print(table)
