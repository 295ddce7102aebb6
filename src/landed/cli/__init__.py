"""The ``landed`` command line: one Typer app (``landed.cli.root``), each command group in its
own module. ``main`` imports only the module of the command it runs: start-up is a large part
of a short command (``landed check`` on a 300,000-line file), and most modules are not needed."""

from __future__ import annotations

import importlib
import sys
import traceback
from collections.abc import Iterable, Sequence
from typing import Any

from landed.util.leave import leave, status_of

__all__ = ["COMMAND_MODULES", "app", "main", "register"]

# Each top-level command or group and the modules under landed.cli that add to it
# (tests/cli/test_cli_lazy.py keeps this true). A word not listed registers every module.
COMMAND_MODULES: dict[str, tuple[str, ...]] = {
    "approve": ("approval",),
    "reject": ("approval",),
    "held": ("approval",),
    "check": ("check",),
    "demo": ("demo.command",),
    "deploy": ("deploy",),
    "dev": ("dev",),
    "exporter": ("exporter",),
    "explain": ("explain",),
    "doctor": ("doctor",),
    "pause": ("fleet",),
    "resume": ("fleet",),
    "status": ("fleet",),
    "guard": ("guard",),
    "keys": ("keys",),
    "board": ("ledger",),
    "receipts": ("ledger",),
    "ledger": ("ledger", "ledger_verify", "ledger_witness"),
    "loops": ("loop",),
    "mcp": ("mcp_server",),
    "loop": ("loop",),
    "repair": ("loop",),
    "plan": ("plan",),
    "receipt": ("receipt",),
    "reconcile": ("reconcile",),
    "sample": ("sample",),
    "schema": ("schema",),
    "snapshot": ("snapshot",),
    "submit": ("submit",),
    "verify": ("verify",),
    "worker": ("worker",),
}
ALL_MODULES = tuple(sorted({m for modules in COMMAND_MODULES.values() for m in modules}))


def register(modules: Iterable[str] = ALL_MODULES) -> Any:
    """Import the command modules (each adds its commands to the app on import); the app."""
    for module in modules:
        importlib.import_module(f"landed.cli.{module}")
    from landed.cli.root import app

    return app


def _modules_for(args: Sequence[str]) -> tuple[str, ...]:
    return COMMAND_MODULES.get(args[0], ALL_MODULES) if args else ALL_MODULES


def __getattr__(name: str) -> Any:
    # The package's ``app`` (for tests and docs) is the app with every command registered.
    if name == "app":
        return register()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def main() -> None:
    """Run the CLI, then leave through ``landed.util.leave`` (a process that used the Temporal
    SDK can crash in interpreter teardown after all work succeeded, sdk-python#300)."""
    try:
        register(_modules_for(sys.argv[1:]))()
    except SystemExit as exc:
        leave(status_of(exc))
    except KeyboardInterrupt:
        leave(130)
    except Exception:  # a defect: shown in full, and still leaving through leave() below
        traceback.print_exc()
        leave(1)
    leave(0)
