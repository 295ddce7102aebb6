"""``landed explain [RULE]``: what a rule of the Definition of Done or of landed's governance
means, how landed holds it and where it shows, from the one catalogue
(``landed.receipts.rules``)."""

from __future__ import annotations

import json

import typer
from rich.markup import escape
from rich.table import Table

from landed.cli.out import emit, fail
from landed.cli.report_console import ReportConsole
from landed.cli.root import app
from landed.receipts.rules import RULES, Rule, find_rule, rule_ids

__all__ = ["explain"]

EXIT_UNKNOWN = 2


def _show_one(rule: Rule) -> None:
    out = ReportConsole(highlight=False)
    out.print(f"[bold]{rule.id}[/bold]  {escape(rule.title)}\n")
    out.print(escape(rule.meaning))
    out.print(f"\n[bold]How landed holds it:[/bold] {escape(rule.enforced)}")
    out.print(f"[bold]Where you see it:[/bold] {escape(rule.shown_by)}")


def _show_all() -> None:
    table = Table(title="landed's rules (landed explain RULE for one)", title_justify="left")
    table.add_column("rule", no_wrap=True)
    table.add_column("what it says")
    for rule in RULES:
        table.add_row(rule.id, escape(rule.title))
    ReportConsole(highlight=False).print(table)


@app.command("explain")
def explain(
    rule: str | None = typer.Argument(
        None, help="A rule id such as DOD-2 or GOV-5 (any case); none lists every rule."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print the rule (or all) as JSON."),
) -> None:
    """Explain a rule of the Definition of Done (DOD-n) or of landed's governance (GOV-n):
    what it means, how landed holds it and which command or receipt field shows it. The ids are
    the ones `landed check` findings name.

    Exit codes: 0 printed; 2 an unknown rule id (the message lists the known ones; under
    --json also as one {"error", "message"} object on stdout).
    """
    if rule is None:
        if as_json:
            emit((json.dumps({"rules": [r.as_dict() for r in RULES]}, indent=2) + "\n").encode())
        else:
            _show_all()
        return
    found = find_rule(rule)
    if found is None:
        raise fail(
            f"unknown rule {rule!r}; known rules: {', '.join(rule_ids())} "
            "(`landed explain` lists them with their titles)",
            EXIT_UNKNOWN,
            json_error="unknown_rule" if as_json else None,
        )
    if as_json:
        emit((json.dumps(found.as_dict(), indent=2) + "\n").encode())
    else:
        _show_one(found)
