"""``landed plan lint``: would a proof plan catch a bad write? Judged on made-up readings."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from landed.cli.out import fail
from landed.cli.root import app

if TYPE_CHECKING:
    from landed.probes.lint import PlanLint
    from landed.task.spec import TaskSpec

__all__ = ["EXIT_CALLS_DONE", "EXIT_CATCHES_ALL", "EXIT_UNJUDGED", "lint_exit", "lint_spec"]

EXIT_CATCHES_ALL = 0
EXIT_CALLS_DONE = 1
EXIT_UNJUDGED = 3

_HELP = """Show which bad writes a proof plan would catch and which it would call done.

FILE is a task (TASK.json, as landed submit takes it), completion contracts (a .jsonl file,
as landed guard takes it) or the operator's claim contracts ({"contracts": {...}}, as the
runner's LANDED_RUNNER_CLAIM_CONTRACTS takes them: linted as the runner lints them at start).
Nothing is run: each step's expectation is handed the readings
these bad writes produce and judged by the verifier's own code: nothing landed, half, double,
already there (the before-state already held), wrong value, probe error, undone after the act.
A task is judged with its pre-read (unless it sets pre_read false); guard contracts without
one, as guard reads each probe once.

Frames are not linted: a frame is judged unchanged byte for byte, whatever its expectation.

Exit codes: 0 every step catches every bad write; 1 some step would call a bad write done;
2 usage error; 3 the file is not a valid task or contracts file, or a step could not be
judged (no made-up reading passes its expectation: check it by hand with landed verify)."""

plan_app = typer.Typer(help="Proof plans: check one before trusting it.", no_args_is_help=True)
app.add_typer(plan_app, name="plan")


def lint_spec(spec: TaskSpec) -> PlanLint:
    """The lint of a task's proof plan, with its pre-read unless it asks to skip it."""
    from landed.probes.lint import lint_plan

    steps = [(f"proof_plan.{i}", c) for i, c in enumerate(spec.proof_plan)]
    return lint_plan(steps, pre_read=spec.pre_read)


def lint_exit(plan: PlanLint) -> int:
    if plan.calls_bad_write_done:
        return EXIT_CALLS_DONE
    return EXIT_UNJUDGED if plan.unjudged else EXIT_CATCHES_ALL


def _lint_file(path: Path, as_json: bool) -> PlanLint:
    from landed.probes.guard import ContractsUnreadable, load_contracts
    from landed.probes.lint import lint_plan
    from landed.task.spec import TaskSpecError
    from landed.task.validate import MAX_TASK_FILE_BYTES, check_spec
    from landed.util.strictjson import TooLarge, read_at_most

    if path.suffix == ".jsonl":
        try:
            contracts, problems = load_contracts(path)
        except ContractsUnreadable as exc:
            error = "unreadable contracts" if as_json else None
            raise fail(str(exc), 3, json_error=error) from None
        if problems:
            why = "; ".join(f"line {p.line}: {p.problem}" for p in problems)
            raise fail(why, 3, json_error="invalid contracts" if as_json else None)
        return lint_plan([(f"line {n}", c) for n, c in contracts], pre_read=False)
    try:
        data = read_at_most(path, MAX_TASK_FILE_BYTES, f"the task file {path}")
        spec = check_spec(data).spec
    except (TooLarge, OSError, TaskSpecError) as exc:
        raise fail(str(exc), 3, json_error="invalid task" if as_json else None) from None
    return lint_spec(spec)


def _lint_claim_contracts(path: Path, as_json: bool) -> None:
    """A claim contracts file: the runner's own lint, then exit (0 clean, 1 refused)."""
    from landed.task.claim_contracts import MAX_CONTRACTS_BYTES, ContractsError
    from landed.task.claim_contracts_lint import parse_claim_contracts
    from landed.util.strictjson import TooLarge, loads, read_at_most

    if path.suffix == ".jsonl":
        return
    try:
        data = read_at_most(path, MAX_CONTRACTS_BYTES, f"the file {path}")
        value = loads(data)
    except (TooLarge, OSError, ValueError, RecursionError):
        return  # not one: the task reader names the problem
    if not isinstance(value, dict) or "contracts" not in value:
        return
    try:
        found = parse_claim_contracts(data, str(path))
    except ContractsError as exc:
        if as_json:
            typer.echo(json.dumps({"file": str(path), "claim_contracts": False, "error": str(exc)}))
        else:
            typer.echo(str(exc))
        raise typer.Exit(EXIT_CALLS_DONE) from None
    names = sorted(found.contracts)
    if as_json:
        typer.echo(json.dumps({"file": str(path), "claim_contracts": names, "error": None}))
    else:
        typer.echo(f"claim contracts {', '.join(names)}: each catches every bad write tried")
    raise typer.Exit(EXIT_CATCHES_ALL)


def render(plan: PlanLint) -> list[str]:
    """The lint for people: each step, then each bad write caught or called done."""
    lines = [] if plan.pre_read else ["judged without a pre-read (no before-state is read)"]
    for step in plan.steps:
        lines.append(f"{step.where} {step.action!r} expects {step.expectation}")
        if step.problem is not None:
            lines.append(f"  not judged: {step.problem}")
            continue
        for s in step.scenarios:
            mark = "caught     " if s.caught else "CALLED DONE"
            seen = f"after {s.after}" if s.before is None else f"{s.before} -> {s.after}"
            lines.append(f"  {mark} {s.name:<22} ({seen}): {s.outcome}")
    if not plan.steps:
        lines.append("no proof plan steps: nothing to lint (such a task is never verified)")
    verdict = (
        "this plan would call a bad write done"
        if plan.calls_bad_write_done
        else "a step could not be judged"
        if plan.unjudged
        else "this plan catches every bad write tried"
    )
    return [*lines, verdict]


@plan_app.command("lint", help=_HELP)
def lint(
    file: Path = typer.Argument(..., help="TASK.json or CONTRACTS.jsonl."),
    as_json: bool = typer.Option(False, "--json", help="Print the report as JSON."),
) -> None:
    from landed.probes.lint import lint_json

    _lint_claim_contracts(file, as_json)
    plan = _lint_file(file, as_json)
    if as_json:
        typer.echo(json.dumps({"file": str(file), **lint_json(plan)}, indent=2))
    else:
        typer.echo("\n".join(render(plan)))
    raise typer.Exit(lint_exit(plan))
