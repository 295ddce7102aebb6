"""``landed COMMAND`` imports only the modules of that command: the map in ``landed.cli`` names
every registered command's module, and ``landed check`` starts without the HTTP client or the
Temporal SDK."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import landed.cli
from landed.cli import ALL_MODULES, COMMAND_MODULES, app


def _registered() -> dict[str, set[str]]:
    found: dict[str, set[str]] = {}
    for command in app.registered_commands:
        assert command.callback is not None
        name = command.name or command.callback.__name__.replace("_", "-")
        found.setdefault(name, set()).add(command.callback.__module__)
    for group in app.registered_groups:
        sub = group.typer_instance
        name = group.name or sub.info.name
        assert isinstance(name, str)
        modules = {c.callback.__module__ for c in sub.registered_commands if c.callback}
        found.setdefault(name, set()).update(modules)
    return found


def test_every_command_is_mapped_to_the_modules_that_register_it() -> None:
    expected = {
        name: {f"landed.cli.{m}" for m in modules} for name, modules in COMMAND_MODULES.items()
    }
    assert _registered() == expected


def test_command_modules_add_to_the_root_app_never_through_the_package() -> None:
    # ``from landed.cli import app`` would register every module, undoing the lazy start.
    folder = Path(landed.cli.__file__).parent
    for path in folder.rglob("*.py"):
        assert "from landed.cli import app\n" not in path.read_text(), path.name
    dotted = {
        p.relative_to(folder).with_suffix("").as_posix().replace("/", ".")
        for p in folder.rglob("*.py")
    }
    assert set(ALL_MODULES) <= dotted


def test_check_starts_without_http_temporal_or_other_commands() -> None:
    probe = (
        "import sys\n"
        "from landed.cli import _modules_for, register\n"
        "register(_modules_for(['check', 'x.jsonl']))\n"
        # rich, asyncio and cryptography too: ``landed check FILE --json`` needs none of them.
        "heavy = ('aiohttp', 'temporalio', 'landed.cli.demo', 'landed.cli.dev', 'httpx',\n"
        "         'rich', 'asyncio', 'cryptography')\n"
        "print(sorted(m for m in heavy if m in sys.modules))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=60
    )
    assert out.stdout.strip() == "[]", out.stdout + out.stderr


@pytest.mark.slow
def test_an_unknown_word_or_help_registers_every_command() -> None:
    run = [sys.executable, "-m", "landed", "--help"]
    out = subprocess.run(run, capture_output=True, text=True, check=False, timeout=60)
    assert out.returncode == 0
    for name in ("check", "dev", "submit", "ledger", "receipts"):
        assert name in out.stdout
    wrong = [sys.executable, "-m", "landed", "chekc"]
    out = subprocess.run(wrong, capture_output=True, text=True, check=False, timeout=60)
    assert out.returncode == 2 and "No such command" in out.stderr
