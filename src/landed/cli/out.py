"""How every command reports an error: a line on stderr, and under --json one object on stdout."""

from __future__ import annotations

import json
import os
import sys
from typing import Any

import typer
from rich.console import Console
from rich.markup import escape

__all__ = ["ReportConsole", "emit", "fail", "reader_left"]


class ReportConsole(Console):
    """A console for a report computed before it is printed (sample, board, demo): a reader
    that leaves early (``| head``) is not a failure of the report, so the command keeps its own
    exit code instead of rich's 1 (which ``sample`` documents as "a verdict differed")."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("emoji", False)
        super().__init__(**kwargs)

    def on_broken_pipe(self) -> None:
        self.quiet = True
        reader_left()


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
    err = Console(stderr=True, soft_wrap=True, emoji=False)
    err.print(f"[bold red]error:[/bold red] {escape(message)}", highlight=False)
    if json_error is not None:
        typer.echo(json.dumps({"error": json_error, "message": message}))
    return typer.Exit(code)
