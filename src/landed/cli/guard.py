"""``landed guard``: block a turn (exit 2) unless every declared completion contract landed."""

from __future__ import annotations

import json
import sys

import typer

from landed.cli.root import app
from landed.probes.guard import BLOCK_EXIT, GuardResult, run_guard

_HELP = """Re-run every completion contract in a JSONL file; block unless all of them landed.

Each line is {"action": ..., "probe": {"kind": ...}, "expect": {"type": ...}}. Every probe is
run again now, by landed, against the sources in the verifier's configuration.

Blocks (exit 2, reasons on stderr) when any contract is not pass (mismatch, empty, vacuous,
duplicated, probe-error), when a line is not a valid contract (an unknown or missing
expectation type blocks; it never turns into a weaker check), when the file cannot be read,
when the checks run past --deadline, and when guard itself fails. Exit 0 when every contract
passed; a pass on the weak default non_empty is named in a note. An empty file declares
nothing and blocks, and so does a missing file, unless --allow-empty is given.

Before-states: a pass of an outcome that was already there before the turn is vacuous and
blocks. Register guard for Claude Code's UserPromptSubmit hook too (the same command line):
when a prompt is submitted it reads every contract once and keeps those readings, signed with
the snapshot key, for the session; at Stop each contract is judged against its reading (a
change expectation needs one). It never blocks a prompt. Outside a hook, --before FILE judges
against a snapshot taken with landed snapshot.

--hook claude-code: run as a Claude Code Stop hook. Reads the hook's JSON from stdin (cwd,
stop_hook_active, ...), resolves a relative --contracts path against its cwd, and answers
in the hook protocol: exit 2 with the reasons on stderr blocks the stop and hands the
reasons to the agent; exit 0 with nothing on stdout lets it stop. The decision is the same
code path as without --hook. With stop_hook_active true guard still blocks while a
contract fails (fail closed); Claude Code's own limit on consecutive Stop-hook blocks is
what ends such a loop. Keep the hook's timeout above --deadline, and register the command
as `landed guard --contracts FILE --hook claude-code || exit 2` so that a landed that
cannot even start still blocks (Claude Code treats exit codes other than 2 as non-blocking).

Exit codes: 0 every contract passed its probe; 2 blocked (or a usage error, which also
blocks)."""


def _paragraphs(text: str) -> str:
    """Hard-wrapped source text as paragraphs, so the help reflows to the terminal's width."""
    return "\n\n".join(" ".join(part.split()) for part in text.split("\n\n"))


def _render(result: GuardResult, *, as_json: bool, hook: str | None) -> int:
    if as_json and hook is None:
        typer.echo(json.dumps(result.to_json(), indent=2))
    if result.block:
        typer.echo("\n".join(result.reasons), err=True)
    else:
        checked = sum(1 for item in result.items if item.landed)
        summary = [
            f"landed guard: all {checked} completion contract(s) passed their probes",
            *result.notes,
        ]
        # In a hook, stdout on exit 0 is parsed as the hook's JSON answer: keep it empty.
        if not as_json or hook is not None:
            typer.echo("\n".join(summary), err=hook is not None)
    return result.exit_code


@app.command("guard", help=_paragraphs(_HELP))
def guard_command(
    contracts: str = typer.Option(..., "--contracts", help="JSONL file of completion contracts."),
    hook: str | None = typer.Option(
        None, "--hook", help="Answer in a hook's protocol; supported: claude-code."
    ),
    config: str | None = typer.Option(
        None, "--config", help="landed.toml with the verifier's sources (default ./landed.toml)."
    ),
    deadline: float = typer.Option(
        50.0, "--deadline", help="Seconds for all checks together; past it guard blocks."
    ),
    as_json: bool = typer.Option(
        False, "--json", help="Also print the decision as JSON on stdout (not with --hook)."
    ),
    allow_empty: bool = typer.Option(
        False, "--allow-empty", help="Pass when no contract is declared (or the file is missing)."
    ),
    before: str | None = typer.Option(
        None, "--before", help="Judge against this snapshot (landed snapshot) of the contracts."
    ),
) -> None:
    code = BLOCK_EXIT
    try:
        result = run_guard(
            contracts,
            hook=hook,
            read_stdin=sys.stdin.read,
            config_file=config,
            deadline_s=deadline,
            allow_empty=allow_empty,
            before_file=before,
        )
        if result.captured:
            # UserPromptSubmit: stdout on exit 0 would be added to the prompt; say it on stderr.
            typer.echo("\n".join(result.notes), err=True)
            code = 0
        else:
            code = _render(result, as_json=as_json, hook=hook)
    except BaseException as exc:  # fail closed even if rendering fails
        sys.stderr.write(f"landed guard blocked: guard itself failed ({type(exc).__name__})\n")
        code = BLOCK_EXIT
    raise typer.Exit(code)
