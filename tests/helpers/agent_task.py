"""An AgentTask run on the dev server by in-process roles (helpers.roles) over a rows db and a
site: its roles, its read-backs, its steps as the progress query shows them, a second run of
its id, and `landed check` reaching the verdict the workflow stored."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

from temporalio.client import WorkflowHandle
from temporalio.common import WorkflowIDReusePolicy
from temporalio.worker import Interceptor

import landed
from helpers.roles import Roles, run_roles
from helpers.sor import Site, rows_task
from helpers.wait import until
from landed.task.messages import Progress


def agent_roles(
    temporal_dev: str,
    tmp_path: Path,
    db: Path,
    site: Site,
    *,
    interceptors: tuple[Interceptor, ...] = (),
    **runner: Any,
) -> Any:
    return run_roles(
        temporal_dev,
        tmp_path,
        credentials={"rows-db": f"sqlite:///{db}", "site": site.url},
        sources={"rows-db": {"url": f"sqlite:///{db}"}, "site": {"url": site.url}},
        runner=runner or None,
        runner_interceptors=interceptors,
    )


def read_back(receipt: landed.Receipt) -> list[landed.ProofItem]:
    return [p for p in receipt.proof if p.kind in landed.READ_BACK_KINDS]


async def _landed(*args: str) -> bytes:
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "landed",
        *args,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await proc.communicate()
    assert proc.returncode in (0, 1), (args, proc.returncode, err.decode(errors="replace"))
    return out


async def verdicts_match_checker(roles: Roles, receipt: landed.Receipt) -> dict[str, object]:
    """What the workflow stored is what `landed check --trust KEY.pub` says about the receipt
    exported from the ledger: another process, the receipt as JSON, only the public key."""
    exported = await _landed("receipts", "export", "--ledger", roles.ledger_url)
    lines = [json.loads(line) for line in exported.decode().splitlines() if line.strip()]
    mine = [line for line in lines if line["task_id"] == receipt.task_id]
    assert len(mine) == 1, mine
    assert mine[0]["verdict"] == receipt.verdict
    path = roles.public_key.parent / f"{receipt.task_id}.jsonl"
    path.write_text(json.dumps(mine[0]) + "\n")
    out = await _landed("check", str(path), "--json", "--trust", str(roles.public_key))
    (task,) = json.loads(out)["tasks"]
    assert receipt.landed is not None and receipt.landed.rung == receipt.verdict
    assert task["proof_level"] == receipt.landed.proof_level
    assert task["proven_status"] == receipt.verdict
    assert task["meets_bar"] == receipt.landed.meets_bar  # type: ignore[attr-defined]
    return dict(task)


async def at_step(handle: landed.TaskHandle, step: str) -> Progress:
    """Poll the task's progress query until it reports ``step`` (a test that means to act
    during that step never acts during another); fail after 30 s, which a loaded machine's
    act and read-back stay well inside."""
    seen: list[str] = []

    async def reached() -> Progress | None:
        progress = await handle.progress()
        seen.append(progress.step)
        return progress if progress.step == step else None

    try:
        return await until(f"the task reaching step {step!r}", reached, timeout=30)
    except AssertionError as err:
        raise AssertionError(f"{err}; last step seen {seen[-1:]!r}") from None


async def held_in_act(
    roles: Roles, db: Path, gate: Path, task_id: str, batch: str, pre_read: bool = True
) -> tuple[landed.TaskHandle, Progress]:
    """A one-row task whose act waits for ``gate``: started, and seen in its act step."""
    task = rows_task(task_id, db, expect=1, batch=batch, write=1, wait_for_file=str(gate))
    task["pre_read"] = pre_read
    handle = await roles.client.start(task)
    return handle, await at_step(handle, "act")


async def second_run(roles: Roles, task: dict[str, Any]) -> landed.Receipt:
    """Another run of the task's id, as Temporal allows once retention drops the first,
    awaited through landed's task handle."""
    handle: WorkflowHandle[Any, landed.Receipt] = await roles.temporal.start_workflow(
        "AgentTask",
        landed.TaskSpec.model_validate(task),
        id=task["task_id"],
        task_queue=roles.queues["runner"],
        id_reuse_policy=WorkflowIDReusePolicy.ALLOW_DUPLICATE,
        result_type=landed.Receipt,
    )
    return await landed.TaskHandle(handle, [], existing=False).result()
