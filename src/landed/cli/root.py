"""The ``landed`` Typer app itself, which every command module adds its commands to. It lives
apart from ``landed.cli`` so a command module can be imported without importing all the others
(``landed.cli.main`` imports only the module of the command it runs)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import typer
from typer.core import TyperGroup

from landed.cli.out import fail

__all__ = ["app"]

# Typer raises Click's UsageError (an unknown option, a value of the wrong type); newer Typer
# vendors Click, so the class is taken from the public BadParameter it derives from.
_UsageError: type[Exception] = next(
    c for c in typer.BadParameter.__mro__ if c.__name__ == "UsageError"
)
_WANTS_JSON = "landed.wants_json"


def _wants_json(args: Sequence[str]) -> bool:
    """--json among the options (not after a ``--`` that ends them)."""
    args = list(args)
    return "--json" in (args[: args.index("--")] if "--" in args else args)


def _json_usage(err: Exception) -> typer.Exit:
    """A usage error Click found, said as every --json error is said: one object on stdout."""
    message = err.format_message() if hasattr(err, "format_message") else str(err)
    ctx = getattr(err, "ctx", None)
    if ctx is not None:
        message += f" (see '{ctx.command_path} --help')"
    return fail(message, getattr(err, "exit_code", 2), json_error="usage")


class _JsonErrors(TyperGroup):
    """Under --json, an option or value Click refuses (``--count notanint``, an unknown
    option) is answered in JSON too, so a program reading the output never gets bare text."""

    def make_context(
        self,
        info_name: str | None,
        args: list[str],
        parent: Any = None,
        **extra: Any,
    ) -> Any:
        wants = _wants_json(args)
        try:
            ctx = super().make_context(info_name, args, parent, **extra)
        except _UsageError as err:
            if wants:
                raise _json_usage(err) from None
            raise
        ctx.meta[_WANTS_JSON] = wants
        return ctx

    def invoke(self, ctx: Any) -> Any:
        try:
            return super().invoke(ctx)
        except _UsageError as err:
            if ctx.meta.get(_WANTS_JSON):
                raise _json_usage(err) from None
            raise


app = typer.Typer(
    cls=_JsonErrors,
    name="landed",
    help=(
        "landed turns an agent's 'done' into a verdict issued after reading the result back.\n\n"
        "Exit codes: 0 success or every done claim meets its bar; 1 a claim or check failed; "
        "2 usage error or a blocked turn (guard); 3 invalid input or a probe that observed "
        "nothing; 5 refused before anything ran (submit: no role can check the task; deploy "
        "promote --gate: the new build's canary task was not verified)."
    ),
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


@app.callback()
def _root() -> None:
    # A callback keeps ``landed`` a group of commands even when only one is registered: without
    # it Typer would run that one command as the program itself.
    pass
