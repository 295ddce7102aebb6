"""``landed deploy status|promote``: the roles' Temporal Worker Deployments and their versions."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer
from rich.table import Table

if TYPE_CHECKING:
    from landed.task.canary import CanaryInput

from landed.cli.out import fail
from landed.cli.report_console import ReportConsole
from landed.cli.root import app

ROLES = ("runner", "actor", "verifier")
_EXIT_CODES = (
    "Exit codes: 0 done; 2 usage error (a bad --ramp percent, an unknown --role); 3 the build "
    "id is not a version of a role's deployment (start its workers first), or a deployment "
    "name from the settings is invalid; 4 Temporal is unreachable or refused the change; "
    "5 (promote --gate) the rollout gate's canary did not settle verified on the build."
)

deploy_app = typer.Typer(
    help="Worker versioning: each role's Temporal Worker Deployment.\n\n" + _EXIT_CODES,
    no_args_is_help=True,
)
app.add_typer(deploy_app, name="deploy")

_ROLE_OPT = typer.Option(
    None, "--role", help="A role to act on (repeat it); default: runner, actor and verifier."
)
_ADDRESS_OPT = typer.Option(None, help="Temporal host:port (default: TEMPORAL_ADDRESS).")
_NAMESPACE_OPT = typer.Option(None, help="Namespace (default: TEMPORAL_NAMESPACE).")


def _deployments(roles: list[str] | None, as_json: bool) -> dict[str, str]:
    """role -> deployment name, from each role's own settings (LANDED_<ROLE>_DEPLOYMENT_NAME)."""
    from landed.temporal.role_setup import settings_for
    from landed.temporal.versioning import VersioningError, deployment_name

    chosen = roles or list(ROLES)
    unknown = [r for r in chosen if r not in ROLES]
    if unknown:
        raise fail(
            f"unknown role {', '.join(unknown)}; use {', '.join(ROLES)}",
            2,
            json_error="usage" if as_json else None,
        )
    try:
        return {role: deployment_name(settings_for(role)) for role in chosen}
    except VersioningError as exc:
        raise fail(str(exc), 3, json_error="settings" if as_json else None) from None


async def _connect(address: str | None, namespace: str | None) -> Any:
    from landed.temporal.plugin import connect, worker_identity

    return await connect(identity=worker_identity("deploy"), address=address, namespace=namespace)


def _unreachable(exc: BaseException, as_json: bool) -> typer.Exit:
    text = " ".join(str(exc).split())[:300] or type(exc).__name__
    return fail(
        f"Temporal did not answer ({text}); check TEMPORAL_ADDRESS / --address and the "
        "namespace, and that the server supports worker deployments",
        4,
        json_error="temporal" if as_json else None,
    )


@deploy_app.command("status")
def status(
    as_json: bool = typer.Option(False, "--json", help="Print the deployments as JSON."),
    role: list[str] | None = _ROLE_OPT,
    address: str | None = _ADDRESS_OPT,
    namespace: str | None = _NAMESPACE_OPT,
) -> None:
    """Each role's deployment: its current and ramping versions and, for the runner (whose
    versions run the tasks), how many open tasks each version still holds. A version with
    open tasks keeps its workers until the count reaches 0.

    Exit codes: 0 shown; 2 usage error; 3 a deployment name from the settings is invalid;
    4 Temporal is unreachable.
    """
    from landed.temporal.deployments import state

    names = _deployments(role, as_json)

    async def read() -> list[dict[str, Any]]:
        client = await _connect(address, namespace)
        return [(await state(client, r, n)).as_dict() for r, n in names.items()]

    try:
        found = asyncio.run(read())
    except Exception as exc:  # connection refused, RPC errors: reported, never a "no tasks"
        raise _unreachable(exc, as_json) from None
    if as_json:
        print(json.dumps({"deployments": found}, indent=2))
        return
    _print_status(found)


def _print_status(found: list[dict[str, Any]]) -> None:
    console = ReportConsole()
    table = Table(title="landed worker deployments")
    for col in ("role", "deployment", "version", "status", "ramp", "open tasks"):
        table.add_column(col)
    for dep in found:
        if not dep["found"]:
            table.add_row(dep["role"], dep["deployment"], "-", "no worker has polled", "", "")
            continue
        for v in dep["versions"] or [{"build_id": "-", "status": "", "open_tasks": None}]:
            ramp = f"{dep['ramp_percent']:g}%" if v["build_id"] == dep["ramping"] else ""
            count = "-" if v["open_tasks"] is None else str(v["open_tasks"])
            table.add_row(dep["role"], dep["deployment"], v["build_id"], v["status"], ramp, count)
    console.print(table)


@deploy_app.command("promote")
def promote(
    build_id: str = typer.Argument(..., help="The version to promote (its LANDED_BUILD_ID)."),
    ramp: float | None = typer.Option(
        None,
        "--ramp",
        help="Send this percent (0-100) of new tasks to BUILD_ID as the ramping version, the "
        "rest to the current one; without it BUILD_ID becomes current.",
    ),
    role: list[str] | None = _ROLE_OPT,
    as_json: bool = typer.Option(False, "--json", help="Print what changed as JSON."),
    address: str | None = _ADDRESS_OPT,
    namespace: str | None = _NAMESPACE_OPT,
    gate: bool = typer.Option(
        False,
        "--gate",
        help="First run LandedRolloutGate on BUILD_ID's runner: one canary task acted, read "
        "back and settled verified on the new build, or nothing is promoted (exit 5).",
    ),
    gate_input: Path | None = typer.Option(
        None,
        "--gate-input",
        metavar="GATE.json",
        help="The gate's input (the ConfigMap landed-rollout-gate's gate.json); needed by --gate.",
    ),
) -> None:
    """Make BUILD_ID the current (or, with --ramp, the ramping) version of each role's
    deployment. New tasks start on it; open tasks finish on the version that started them.

    Every role is checked before any is changed: a build id that is not a version of one of
    the deployments changes nothing.

    Exit codes: 0 promoted; 2 usage error (--ramp outside 0-100); 3 BUILD_ID is not a version
    of a role's deployment (start that role's workers with LANDED_BUILD_ID=BUILD_ID first);
    4 Temporal is unreachable or refused the change (the message says why).
    """
    from landed.temporal.deployments import UnknownVersion
    from landed.temporal.rollout import GateFailed

    if ramp is not None and not 0 <= ramp <= 100:
        raise fail(
            f"--ramp {ramp:g} is not a percent; give 0 to 100 (or leave it out to make "
            f"{build_id} current)",
            2,
            json_error="usage" if as_json else None,
        )
    names = _deployments(role, as_json)
    canary = _gate_input(gate, gate_input, ramp, names, as_json)
    try:
        changed = asyncio.run(_promote(names, build_id, ramp, address, namespace, canary))
    except GateFailed as exc:
        raise fail(
            f"the rollout gate failed on build {build_id}; nothing was promoted: {exc}",
            EXIT_GATE,
            json_error="gate failed" if as_json else None,
        ) from None
    except UnknownVersion as exc:
        raise fail(str(exc), 3, json_error="unknown build id" if as_json else None) from None
    except Exception as exc:
        raise _unreachable(exc, as_json) from None
    if as_json:
        print(json.dumps({"build_id": build_id, "ramp": ramp, "roles": changed}, indent=2))
        return
    what = f"ramping at {ramp:g}%" if ramp is not None else "current"
    for r, previous in changed.items():
        print(f"{r}: {names[r]} {build_id} is {what} (was {previous or 'unversioned'})")


EXIT_GATE = 5


def _gate_input(
    gate: bool, path: Path | None, ramp: float | None, names: dict[str, str], as_json: bool
) -> CanaryInput | None:
    """The gate's input, read and checked before anything is changed (None without --gate)."""
    from pydantic import ValidationError

    from landed.task.canary import CanaryInput

    if not gate:
        return None
    usage = "usage" if as_json else None
    if path is None or ramp is not None or "runner" not in names:
        raise fail(
            "--gate needs --gate-input GATE.json, the runner among the roles, and no --ramp "
            "(the gate runs before the build takes any traffic)",
            2,
            json_error=usage,
        )
    try:
        return CanaryInput.model_validate_json(path.read_bytes()[:1_000_000])
    except (OSError, ValidationError) as exc:
        raise fail(f"--gate-input {path}: {exc}", 2, json_error=usage) from None


async def _promote(
    names: dict[str, str],
    build_id: str,
    ramp: float | None,
    address: str | None,
    ns: str | None,
    canary: CanaryInput | None = None,
) -> dict[str, str | None]:
    from landed.temporal.deployments import promote, require_version
    from landed.temporal.plugin import worker_identity
    from landed.temporal.role_setup import settings_for
    from landed.temporal.rollout import gated_promote

    client = await _connect(address, ns)
    if canary is not None:
        queue = settings_for("runner").task_queue
        return await gated_promote(
            client, names, build_id, runner_queue=queue, gate=canary, identity="deploy-gate"
        )
    for name in names.values():
        await require_version(client, name, build_id)  # every role known before any changes
    identity = worker_identity("deploy")
    return {
        role: await promote(client, name, build_id, ramp=ramp, identity=identity)
        for role, name in names.items()
    }
