"""The console of a report computed before it is printed, apart from ``landed.cli.out`` so that
a command that prints no report (``landed check --json``) starts without importing rich."""

from __future__ import annotations

from typing import Any

from rich.console import Console

from landed.cli.out import reader_left

__all__ = ["ReportConsole"]


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
