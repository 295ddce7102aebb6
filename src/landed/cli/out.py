"""How every command reports an error: a line on stderr, and under --json one object on stdout."""

from __future__ import annotations

import json
import os
import sys

import typer

# rich is imported where something is printed through it (``fail``; a report's console is
# ``landed.cli.report_console``): ``landed check --json`` starts without it.

__all__ = ["emit", "fail", "reader_left"]


def reader_left() -> None:
    """The reader of stdout left (``| head``): send the rest of the output nowhere, so neither
    later writes nor Python's exit-time flush fail on the closed pipe."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)


def emit(data: bytes) -> None:
    """Write a computed report (JSON) to stdout; a reader that left early does not change the
    command's exit code (see ReportConsole)."""
    try:
        sys.stdout.buffer.write(data)
        sys.stdout.flush()
    except BrokenPipeError:
        reader_left()


def fail(message: str, code: int, *, json_error: str | None = None) -> typer.Exit:
    """Say why on stderr; under --json (``json_error`` given) also as one JSON object on
    stdout, so a program reading the output always gets JSON. Returns the exit to raise."""
    # Messages quote paths, URLs and user text (a task id such as deploy:rocket:prod): printed
    # as text, never read as markup or emoji codes.
    from rich.console import Console
    from rich.markup import escape

    err = Console(stderr=True, soft_wrap=True, emoji=False)
    err.print(f"[bold red]error:[/bold red] {escape(message)}", highlight=False)
    if json_error is not None:
        typer.echo(json.dumps({"error": json_error, "message": message}))
    return typer.Exit(code)
