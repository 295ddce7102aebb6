"""The ``landed`` command line: one Typer app, each command group in its own module."""

from __future__ import annotations

import os
import sys

import typer

__all__ = ["app", "main"]

app = typer.Typer(
    name="landed",
    help=(
        "landed turns an agent's 'done' into a verdict issued after reading the result back.\n\n"
        "Exit codes: 0 success or every done claim meets its bar; 1 a claim or check failed; "
        "2 usage error or a blocked turn (guard); 3 invalid input or a probe that observed nothing."
    ),
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


def _register() -> None:
    # Each command module adds its commands to ``app`` on import.
    from landed._cli import (  # noqa: F401
        _check,
        _demo,
        _dev,
        _guard,
        _keys,
        _ledger,
        _sample,
        _schema,
        _submit,
        _verify,
        _worker,
    )


_register()


def main() -> None:
    """Run the CLI, then leave with os._exit: a process that used the Temporal SDK can crash
    in interpreter teardown after all work succeeded (sdk-python#300)."""
    status = 0
    try:
        app()
    except SystemExit as exc:
        code = exc.code
        status = code if isinstance(code, int) else (0 if code is None else 1)
    except KeyboardInterrupt:
        status = 130
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(status)
