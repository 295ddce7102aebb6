"""How every command reports an error: a line on stderr, and under --json one object on stdout."""

from __future__ import annotations

import json

import typer
from rich.console import Console
from rich.markup import escape

__all__ = ["fail"]


def fail(message: str, code: int, *, json_error: str | None = None) -> typer.Exit:
    """Say why on stderr; under --json (``json_error`` given) also as one JSON object on
    stdout, so a program reading the output always gets JSON. Returns the exit to raise."""
    # Messages quote paths, URLs and user text (a task id such as deploy:rocket:prod): printed
    # as text, never read as markup or emoji codes.
    err = Console(stderr=True, soft_wrap=True, emoji=False)
    err.print(f"[bold red]error:[/bold red] {escape(message)}", highlight=False)
    if json_error is not None:
        typer.echo(json.dumps({"error": json_error, "message": message}))
    return typer.Exit(code)
