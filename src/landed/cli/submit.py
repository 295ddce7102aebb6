"""``landed submit task.json``: validate a task, start it once, optionally wait for its verdict."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

import typer

from landed.cli.out import fail
from landed.cli.root import app


async def _submit(
    data: bytes,
    wait: bool,
    address: str | None,
    namespace: str | None,
    task_queue: str | None,
    out: dict[str, Any],
    check_roles: bool = True,
) -> dict[str, Any]:
    """Fill ``out`` as the submission goes, so an interrupt can still say what was started."""
    from landed.cli.submit_watch import watch, web_ui_base, web_ui_link
    from landed.telemetry import tracing
    from landed.temporal.client import Client

    # The submission starts the task's trace when OTEL_* names an endpoint.
    tracing.configure("landed-submit")
    try:
        client = await Client.connect(
            address, namespace=namespace, task_queue=task_queue, check_roles=check_roles
        )
        handle = await client.start(data)
        out.update(task_id=handle.task_id, existing=handle.existing, warnings=handle.warnings)
        if wait:
            temporal = client.temporal
            base = web_ui_base(temporal.service_client.config.target_host)
            link = web_ui_link(base, temporal.namespace, handle.task_id, handle.run_id)
            out["web_ui"] = link
            print(f"{handle.task_id}: {link}", file=sys.stderr, flush=True)
            receipt = await watch(handle)
            out["receipt"] = receipt.model_dump(mode="json", by_alias=True, exclude_none=True)
        return out
    finally:
        await asyncio.to_thread(tracing.shutdown)


def _fail(message: str, code: int, as_json: bool, error: str) -> typer.Exit:
    return fail(message, code, json_error=error if as_json else None)


def _line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return text[:300] or type(exc).__name__


@app.command("submit")
def submit(
    task_file: Path = typer.Argument(..., help="A TaskSpec as JSON ('-' reads stdin)."),
    wait: bool = typer.Option(False, "--wait", help="Wait for the settled receipt."),
    as_json: bool = typer.Option(False, "--json", help="Print the result as JSON."),
    address: str | None = typer.Option(
        None, help="Temporal host:port (default: TEMPORAL_ADDRESS)."
    ),
    namespace: str | None = typer.Option(None, help="Namespace (default: TEMPORAL_NAMESPACE)."),
    task_queue: str | None = typer.Option(
        None, help="The runner's task queue (default landed-runner)."
    ),
    lint: bool = typer.Option(
        False,
        "--lint",
        help="Lint the proof plan first (as landed plan lint) and refuse a plan that would call "
        "a bad write done or that the lint cannot judge.",
    ),
    force: bool = typer.Option(
        False, "--force", help="With --lint: submit a plan the lint refuses (report on stderr)."
    ),
    no_role_check: bool = typer.Option(
        False,
        "--no-role-check",
        help="Start the task without first asking the running roles whether they can run and "
        "check it (the workflow still settles it blocked, with no act, if they cannot).",
    ),
) -> None:
    """Start an agent task as an AgentTask workflow (task id = workflow id).

    With --wait, stderr shows the task's Temporal Web UI link (LANDED_WEB_UI, else the
    frontend's host at its port + 1000) and each step as it is reached: pre-read, acting,
    verifying, settled.

    Submitting the same task again never acts twice: it attaches to the existing task. Another
    task under the same id is refused.

    Exit codes: 0 started (or, with --wait, settled as verified/reconciled); 1 settled but not
    done (a read-back found something other than the claim), the workflow failed, Temporal
    refused the request or is unreachable; 3 settled but not done because nothing could be
    observed (every read-back that did not pass is a probe-error), an invalid task spec (each
    bad field is named with the reason; binary or too deeply nested input too), or its task id
    already belongs to another task, or (with --lint, without --force) a proof plan the lint
    refuses, started nothing; 5 refused before starting: a running role cannot run or check the
    task (the actor lacks its act, the verifier a source or command it names) or did not
    answer in time; the message names the fix; 130 interrupted (Ctrl-C): a task already
    started runs on, and submitting the same file again attaches to it.
    """
    data = _checked_task(task_file, as_json)
    if lint:
        _linted(data, force, as_json)
    out = _submitted(data, wait, address, namespace, task_queue, as_json, not no_role_check)
    receipt = out.get("receipt")
    if as_json:
        print(json.dumps(out, indent=2))
    else:
        _print_result(out, receipt)
    if receipt is not None and receipt.get("verdict") not in ("verified", "reconciled"):
        raise typer.Exit(_not_done_code(receipt))


def _not_done_code(receipt: dict[str, Any]) -> int:
    """3 when nothing could be observed (every read-back that did not pass is a probe-error,
    as ``landed verify`` says 3 for a probe that observed nothing), else 1: something was read
    and it is not the claim."""
    from landed.receipts.ladder import READ_BACK_KINDS

    proofs = receipt.get("proof") or []
    failed = [
        p.get("result")
        for p in proofs
        if isinstance(p, dict) and p.get("kind") in READ_BACK_KINDS and p.get("result") != "pass"
    ]
    return 3 if failed and all(result == "probe-error" for result in failed) else 1


def _checked_task(task_file: Path, as_json: bool) -> bytes:
    """The task file's bytes once check_spec accepts them; its warnings go to stderr."""
    from landed.task.spec import TaskSpecError
    from landed.task.validate import MAX_SPEC_BYTES, MAX_TASK_FILE_BYTES, check_spec
    from landed.util.strictjson import TooLarge, read_at_most

    source = sys.stdin.buffer if str(task_file) == "-" else task_file
    try:
        data = read_at_most(source, MAX_TASK_FILE_BYTES, f"the task file {task_file}")
    except TooLarge as exc:
        raise _fail(
            f"{exc}; a task is at most {MAX_SPEC_BYTES:,} bytes as JSON",
            3,
            as_json,
            "task file too large",
        ) from None
    except OSError as exc:
        why = f"cannot read {task_file}: {exc.strerror or exc}"
        raise _fail(why, 3, as_json, "unreadable task file") from None
    try:
        check = check_spec(data)
    except TaskSpecError as exc:
        # Every --json error is {"error", "message"}; this one also lists each field's problem.
        print(f"landed submit: {exc}", file=sys.stderr)
        if as_json:
            problems = [{"field": f, "reason": r} for f, r in exc.problems]
            answer = {"error": "invalid task spec", "message": str(exc), "problems": problems}
            print(json.dumps(answer))
        raise typer.Exit(3) from None
    if not as_json:
        for warning in check.warnings:
            print(f"warning: {warning}", file=sys.stderr)
    return data


def _linted(data: bytes, force: bool, as_json: bool) -> None:
    """Refuse (exit 3, nothing started) a plan the lint would not trust, unless forced."""
    from landed.cli.plan import EXIT_CATCHES_ALL, lint_exit, lint_spec, render
    from landed.probes.lint import lint_json
    from landed.task.validate import check_spec

    plan = lint_spec(check_spec(data).spec)
    if lint_exit(plan) == EXIT_CATCHES_ALL:
        return
    report = "\n".join(render(plan))
    if force:
        print(f"landed submit: --force given, submitting anyway:\n{report}", file=sys.stderr)
        return
    why = (
        "the plan lint refused this proof plan (it would call a bad write done, or a step "
        "could not be judged); strengthen the expectations, or pass --force to submit it anyway"
    )
    print(f"landed submit: {why}\n{report}", file=sys.stderr)
    if as_json:
        print(json.dumps({"error": "plan lint refused", "message": why, "lint": lint_json(plan)}))
    raise typer.Exit(3)


def _submitted(
    data: bytes,
    wait: bool,
    address: str | None,
    namespace: str | None,
    task_queue: str | None,
    as_json: bool,
    check_roles: bool = True,
) -> dict[str, Any]:
    """What Temporal answered for the submission; each way it can fail exits with its code."""
    started: dict[str, Any] = {}
    try:
        run = _submit(data, wait, address, namespace, task_queue, started, check_roles)
        return asyncio.run(run)
    except KeyboardInterrupt:
        if "task_id" in started:
            why = (
                f"interrupted while waiting for task {started['task_id']!r}; it was started and "
                "runs on in Temporal: submit the same file again with --wait to wait for its "
                "receipt (it attaches and never acts twice)"
            )
        else:
            why = (
                "interrupted before Temporal answered; the task may or may not have started: "
                "submit the same file again (it attaches and never acts twice)"
            )
        raise _fail(why, 130, as_json, "interrupted") from None
    except Exception as exc:  # never a traceback: name what went wrong
        why, code, error = _submit_failure(exc)
        raise _fail(why, code, as_json, error) from None


def _submit_failure(exc: Exception) -> tuple[str, int, str]:
    """Why a submission failed, its exit code and its --json error."""
    from temporalio.client import WorkflowFailureError
    from temporalio.service import RPCError

    from landed.temporal.client_errors import (
        NamespaceNotReady,
        TaskIdReused,
        TaskNotSettled,
        TemporalUnreachable,
    )
    from landed.temporal.role_check import TaskRefused

    if isinstance(exc, TemporalUnreachable):
        return str(exc), 1, "Temporal unreachable"
    if isinstance(exc, TaskIdReused):
        return str(exc), 3, "task id reused"
    if isinstance(exc, TaskRefused):
        return str(exc), 5, "refused: cannot be checked"
    if isinstance(exc, TaskNotSettled):
        return str(exc), 1, "workflow failed"
    if isinstance(exc, WorkflowFailureError):
        cause = exc.cause if exc.cause is not None else exc
        why = (
            f"the task's workflow failed before settling ({type(cause).__name__}: "
            f"{_line(cause)}); nothing was settled as done: read its history in the Temporal "
            "UI, fix the cause and submit it under a new task_id"
        )
        return why, 1, "workflow failed"
    if isinstance(exc, RPCError):
        why = (
            f"Temporal refused the request ({exc.status.name}: {_line(exc)}); check --address, "
            "--namespace and --task-queue (or TEMPORAL_ADDRESS)"
        )
        return why, 1, "refused by Temporal"
    if isinstance(exc, NamespaceNotReady):
        return str(exc), 1, "namespace not ready"
    if isinstance(exc, (RuntimeError, OSError, TimeoutError)):
        why = (
            f"cannot reach Temporal ({_line(exc)}); start it with `landed dev`, or set "
            "TEMPORAL_ADDRESS to the address your server (or `landed dev`) printed"
        )
        return why, 1, "Temporal unreachable"
    why = (
        f"the submission failed ({type(exc).__name__}: {_line(exc)}); it may or may not "
        "have started; submitting it again attaches to it and never acts twice"
    )
    return why, 1, "submission failed"


def _print_result(out: dict[str, Any], receipt: dict[str, Any] | None) -> None:
    verb = "already submitted" if out["existing"] else "started"
    print(f"{out['task_id']}: {verb}")
    if receipt is not None:
        from landed.receipts.model import Receipt

        settled = Receipt.model_validate(receipt)
        print(f"{'DONE' if settled.done else 'NOT DONE'}: {settled.why}")
        landed = receipt.get("landed", {})
        print(
            f"verdict {receipt.get('verdict')} ({landed.get('proof_level')}) by "
            f"{receipt.get('verdict_by')}"
        )
        for finding in landed.get("findings", []):
            print(f"  {finding}")
