"""Write docs/reference/cli.md from the ``landed`` Typer app: every command, its help, its
arguments and options. ``python docs/scripts/cli_reference.py`` (``make docs``) rewrites the
page; tests/test_docs.py fails while the committed page differs from what this renders."""

from __future__ import annotations

import sys
from enum import Enum
from pathlib import Path
from typing import Any

PAGE = Path(__file__).resolve().parents[1] / "reference" / "cli.md"

HEADER = """# CLI reference

Generated from the `landed` command's own help by `docs/scripts/cli_reference.py`
(`make docs`); a test fails while this page differs from the app. `landed COMMAND --help`
prints the same.
"""


def render() -> str:
    """The whole page, as Markdown."""
    import typer

    from landed.cli import register

    root = typer.main.get_command(register())
    parts = [HEADER, _text(root.help or ""), ""]
    for path, command in _commands(root, ["landed"]):
        parts += _command(path, command)
    return "\n".join(parts).rstrip() + "\n"


def _commands(command: Any, path: list[str]) -> list[tuple[list[str], Any]]:
    """Every command under ``command``, depth first, groups before their commands."""
    found: list[tuple[list[str], Any]] = []
    for name in sorted(getattr(command, "commands", {})):
        sub = command.commands[name]
        if getattr(sub, "hidden", False):
            continue
        found.append(([*path, name], sub))
        found += _commands(sub, [*path, name])
    return found


def _command(path: list[str], command: Any) -> list[str]:
    level = "#" * min(len(path), 4)
    lines = [f"{level} `{' '.join(path)}`", "", _text(command.help or ""), ""]
    if getattr(command, "commands", None):
        return lines
    lines += [f"Usage: `{_usage(path, command)}`", ""]
    rows = [_row(param) for param in command.params if not getattr(param, "hidden", False)]
    if rows:
        lines += ["| argument or option | default | meaning |", "|---|---|---|", *rows, ""]
    return lines


def _usage(path: list[str], command: Any) -> str:
    words = [*path]
    if any(p.param_type_name == "option" for p in command.params):
        words.append("[OPTIONS]")
    for param in command.params:
        if param.param_type_name == "argument":
            name = (param.name or "").upper()
            words.append(name if param.required else f"[{name}]")
    return " ".join(words)


def _row(param: Any) -> str:
    if param.param_type_name == "argument":
        name = f"`{(param.name or '').upper()}`"
    else:
        name = ", ".join(f"`{o}`" for o in [*param.opts, *param.secondary_opts])
    return f"| {name} | {_default(param)} | {_cell(getattr(param, 'help', None) or '')} |"


def _default(param: Any) -> str:
    if param.required:
        return "required"
    value = param.default
    if value is None or callable(value) or (getattr(param, "is_flag", False) and value is False):
        return ""
    if isinstance(value, Enum):
        value = value.value
    return f"`{value}`"


def _text(help_text: str) -> str:
    return "\n\n".join(
        " ".join(_escape(line.strip()) for line in block.splitlines() if line.strip() != "\b")
        for block in help_text.strip().split("\n\n")
    )


def _cell(text: str) -> str:
    return " ".join(_escape(text).split()).replace("|", "\\|")


def _escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


if __name__ == "__main__":
    PAGE.write_text(render())
    sys.stdout.write(f"wrote {PAGE}\n")
