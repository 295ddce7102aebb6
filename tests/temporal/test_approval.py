"""The approval gate (GOV-5, GOV-7) on a real Temporal dev server: a task whose act cannot be
undone waits, held, for a person; Updates decide it, validators refuse the wrong decisions.

Updates run on the dev server (the time-skipping server's deadline tests are in
test_gates_time.py)."""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from helpers.approvers import PEOPLE, approver_keys
from helpers.fleet_roles import role_worker
from helpers.roles import Roles, run_roles
from helpers.sor import act_runs, make_rows_db, row_count, rows_task
from helpers.wait import until
from temporalio.client import WorkflowHistory
from temporalio.worker import Replayer

import landed
from landed.temporal.approvals import ApprovalRefused, HeldTask
from landed.temporal.plugin import landed_plugin
from landed.temporal.settings import RunnerSettings

pytestmark = pytest.mark.timeout(180)


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return make_rows_db(tmp_path / "rows.db")


@pytest.fixture
def keys(tmp_path: Path) -> dict[str, Path]:
    """Each approver's .key file; the runner of _roles trusts their .pub files."""
    return approver_keys(tmp_path, (*PEOPLE, "agent-a"))[1]


def _roles(address: str, tmp_path: Path, db: Path, **runner: Any) -> Any:
    runner.setdefault("approvers", [str(tmp_path / "approvers-trusted")])
    return run_roles(
        address,
        tmp_path,
        credentials={"rows-db": f"sqlite:///{db}"},
        sources={"rows-db": {"url": f"sqlite:///{db}"}},
        acts=("helpers.acts", "helpers.gate_acts"),
        runner=runner,
    )


def gated(task_id: str, db: Path, batch: str, **extra: Any) -> dict[str, Any]:
    """A two-row task declared irreversible (send)."""
    return {
        **rows_task(task_id, db, expect=2, batch=batch, write=2),
        "irreversible": "send",
        **extra,
    }


async def held_now(handle: landed.TaskHandle) -> None:
    """Wait (bounded) until the task waits at its gate."""

    async def waiting() -> bool:
        return (await handle.progress()).rung == "held"

    await until(f"task {handle.task_id} waits at its approval gate", waiting, timeout=30)


async def _replay(roles: Roles, task_id: str) -> None:
    history: WorkflowHistory = await roles.temporal.get_workflow_handle(task_id).fetch_history()
    from landed.workflows.agent_task import AgentTask

    await Replayer(workflows=[AgentTask], plugins=[landed_plugin()]).replay_workflow(history)


async def test_an_approved_task_acts_is_read_back_and_names_its_approver(
    temporal_dev: str, tmp_path: Path, db: Path, keys: dict[str, Path]
) -> None:
    """Held before the act (nothing written, rung held), approved by a person: the act runs once,
    the read-back verifies, and the receipt names the approver and the note."""
    async with _roles(temporal_dev, tmp_path, db) as roles:
        handle = await roles.client.start(gated("appr-1", db, "a1"))
        await held_now(handle)
        assert act_runs(db, "appr-1") == []  # waiting: no act, and no pre-read claim
        assert (await handle.progress()).step == "approval"
        view = await handle.approve("dana", note="checked the copy", key=keys["dana"])
        assert view.decision is not None and view.decision.by == "dana"
        receipt = await handle.result()
        await _replay(roles, "appr-1")
    assert receipt.verdict == "verified"
    assert act_runs(db, "appr-1") == [(1, "appr-1")]
    assert receipt.approval is not None and receipt.approval.required
    assert receipt.approval.approved_by == "dana"
    gate = receipt.landed.model_dump()["approval"] if receipt.landed else {}
    assert gate["decision"] == "approved" and gate["note"] == "checked the copy", gate


async def test_wrong_decisions_are_refused_and_change_nothing(
    temporal_dev: str, tmp_path: Path, db: Path, keys: dict[str, Path]
) -> None:
    """The owner cannot approve its own task; a second decision, a decision on a task that is
    not waiting, an unknown task and a settled one each get a clear refusal."""
    async with _roles(temporal_dev, tmp_path, db) as roles:
        plain = await roles.client.start(rows_task("appr-plain", db, expect=1, batch="p", write=1))
        handle = await roles.client.start(gated("appr-2", db, "a2"))
        await held_now(handle)
        with pytest.raises(ApprovalRefused, match="owns task 'appr-2'"):
            # The owner, however spelt, even with a key the runner trusts for its name.
            await handle.approve("Agent-A ", key=keys["agent-a"])
        assert (await handle.progress()).rung == "held"  # the refusal recorded nothing
        await handle.approve("erin", key=keys["erin"])
        with pytest.raises(ApprovalRefused, match="already approved by erin"):
            await handle.approve("frank", key=keys["frank"])
        with pytest.raises(ApprovalRefused, match="already approved by erin"):
            await handle.reject("frank", "too late", key=keys["frank"])
        assert (await handle.result()).verdict == "verified"
        with pytest.raises(ApprovalRefused, match="no longer running"):
            await handle.approve("frank", key=keys["frank"])
        with pytest.raises(ApprovalRefused, match="no task 'no-such-task'"):
            await roles.client.task("no-such-task").approve("frank", key=keys["frank"])
        # A task with no gate never waits: approving it is refused.
        receipt = await plain.result()
        assert receipt.verdict == "verified" and receipt.approval is not None
        assert not receipt.approval.required
        await _replay(roles, "appr-2")
    assert act_runs(db, "appr-2") == [(1, "appr-2")]


async def test_a_rejected_task_settles_held_with_nothing_done(
    temporal_dev: str, tmp_path: Path, db: Path, keys: dict[str, Path]
) -> None:
    async with _roles(temporal_dev, tmp_path, db) as roles:
        handle = await roles.client.start(gated("appr-rej", db, "r1"))
        await held_now(handle)
        await handle.reject("gail", "wrong audience", key=keys["gail"])
        receipt = await handle.result()
        async with await roles.ledger() as ledger:
            stored = await ledger.get("appr-rej")
        await _replay(roles, "appr-rej")
    assert receipt.verdict == "held"
    assert "rejected by gail: wrong audience" in (receipt.report or "")
    assert act_runs(db, "appr-rej") == [] and row_count(db, "r1") == 0
    assert receipt.approval is not None and receipt.approval.approved_by is None
    assert [r.verdict for r in stored] == ["held"]


async def test_a_submitted_approval_does_not_open_the_gate(
    temporal_dev: str, tmp_path: Path, db: Path, keys: dict[str, Path]
) -> None:
    """Nothing the agent sends removes a hold: an approved_by written into the task itself is
    not a decision at the gate; the task still waits."""
    task = gated("appr-self", db, "s1", approval={"required": True, "approved_by": "agent-a"})
    async with _roles(temporal_dev, tmp_path, db) as roles:
        handle = await roles.client.start(task)
        await held_now(handle)
        assert act_runs(db, "appr-self") == []
        await handle.reject("hal", "self-approved", key=keys["hal"])
        receipt = await handle.result()
    assert receipt.verdict == "held"
    assert receipt.approval is not None and receipt.approval.approved_by is None


async def test_an_act_registered_irreversible_never_runs_unapproved(
    temporal_dev: str, tmp_path: Path, db: Path, keys: dict[str, Path]
) -> None:
    """A task that forgot to declare irreversible: the actor refuses the act registered with
    irreversible="send" (nothing sent) and the task settles held, saying what to declare."""

    def send(task_id: str) -> dict[str, Any]:  # the act sends one row, of batch = task id
        task = rows_task(task_id, db, expect=1, batch=task_id)
        return {**task, "act": {"name": "test.send_irreversible", "input": {}}}

    async with _roles(temporal_dev, tmp_path, db) as roles:
        receipt = await roles.client.run(send("appr-undeclared"))
        declared = await roles.client.start({**send("appr-declared"), "irreversible": "send"})
        await held_now(declared)
        await declared.approve("ivy", key=keys["ivy"])
        approved = await declared.result()
    assert receipt.verdict == "held", receipt
    assert "declare irreversible: send" in (receipt.report or "")
    assert act_runs(db, "appr-undeclared") == []
    assert approved.verdict == "verified" and act_runs(db, "appr-declared") == [(1, "sent")]


async def test_landed_held_lists_what_waits_with_age_and_approvers(
    temporal_dev: str, tmp_path: Path, db: Path, keys: dict[str, Path]
) -> None:
    task = gated("appr-list", db, "l1", approval={"approver": "jo"})
    async with _roles(temporal_dev, tmp_path, db) as roles:
        handle = await roles.client.start(task)
        await held_now(handle)

        async def listed() -> list[HeldTask] | None:
            found = [t for t in await roles.client.held() if t.task_id == "appr-list"]
            return found or None

        (row,) = await until("landed held lists appr-list", listed, timeout=30)
        with pytest.raises(ApprovalRefused, match="names 'jo' as its approver"):
            await handle.approve("kim", key=keys["kim"])
        proc = await asyncio.create_subprocess_exec(
            *_landed("held", "--json", "--address", temporal_dev),
            stdout=asyncio.subprocess.PIPE,
        )
        out, _ = await proc.communicate()
        await handle.approve("jo", key=keys["jo"])
        await handle.result()
        assert not [t for t in await roles.client.held() if t.task_id == "appr-list"]
    assert row.kind == "send" and row.approvers == "jo" and row.owner == "agent-a"
    assert row.age_s is not None and row.age_s >= 0 and row.deadline is not None
    assert proc.returncode == 0
    assert "appr-list" in [t["task_id"] for t in json.loads(out)]


def _landed(*args: str) -> list[str]:
    import sys

    return [str(Path(sys.executable).parent / "landed"), *args]


async def test_the_cli_approves_and_refuses_with_exit_codes(
    temporal_dev: str, tmp_path: Path, db: Path, keys: dict[str, Path]
) -> None:
    async with _roles(temporal_dev, tmp_path, db) as roles:
        handle = await roles.client.start(gated("appr-cli", db, "c1"))
        await held_now(handle)
        owner = await _cli(
            "approve",
            "appr-cli",
            "--by",
            "agent-a",
            "--key",
            str(keys["agent-a"]),
            "--json",
            temporal_dev,
        )
        unsigned = await _cli("approve", "appr-cli", "--by", "lee", "--json", temporal_dev)
        ok = await _cli(
            "approve",
            "appr-cli",
            "--by",
            "lee",
            "--note",
            "fine",
            "--key",
            str(keys["lee"]),
            temporal_dev,
        )
        receipt = await handle.result()
    assert owner[0] == 3 and json.loads(owner[1])["error"] == "refused"
    assert unsigned[0] == 3 and "no approver key" in unsigned[1]
    assert ok[0] == 0 and "approved by lee" in ok[1]
    assert receipt.verdict == "verified" and receipt.approval is not None
    assert receipt.approval.approved_by == "lee"


async def _cli(*args: str) -> tuple[int, str]:
    *rest, address = args
    proc = await asyncio.create_subprocess_exec(
        *_landed(*rest, "--address", address),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, _ = await proc.communicate()
    return proc.returncode or 0, out.decode()


@asynccontextmanager
async def _runner(address: str, roles: Roles, name: str, approvers: Path) -> AsyncIterator[None]:
    """A runner worker of its own on the roles' runner queue, stopped on exit (its process's
    crash, as far as Temporal can tell: the task waits for the next runner)."""
    settings = RunnerSettings(
        task_queue=roles.queues["runner"],
        identity=name,
        ledger_url=roles.ledger_url,
        actor_task_queue=roles.queues["actor"],
        verifier_task_queue=roles.queues["verifier"],
        trust=[roles.public_key],
        approvers=[str(approvers)],
        max_cached_workflows=0,
        sandbox="strict",
        # Unversioned, as run_roles' workers: a versioned one would wait for a promotion.
        versioning=False,
    )
    async with role_worker(address, settings):
        yield


async def test_a_runner_lost_while_a_task_waits_acts_once_after_approval(
    temporal_dev: str, tmp_path: Path, db: Path, keys: dict[str, Path]
) -> None:
    """Kill the runner while the task waits for approval, start another, approve: the task
    acts exactly once and settles verified."""
    elsewhere = f"idle-{uuid.uuid4().hex[:8]}"  # the stack's own runner serves another queue
    async with _roles(temporal_dev, tmp_path, db, task_queue=elsewhere) as roles:
        trusted = tmp_path / "approvers-trusted"
        async with _runner(temporal_dev, roles, "runner-one", trusted):
            handle = await roles.client.start(gated("appr-kill", db, "k1"))
            await held_now(handle)
        async with _runner(temporal_dev, roles, "runner-two", trusted):
            await handle.approve("mo", key=keys["mo"])
            receipt = await handle.result()
        await _replay(roles, "appr-kill")
    assert receipt.verdict == "verified"
    assert act_runs(db, "appr-kill") == [(1, "appr-kill")]
    assert row_count(db, "k1") == 2


async def test_the_time_cap_stops_an_act_in_flight_and_reads_back_what_it_wrote(
    temporal_dev: str, tmp_path: Path, db: Path, keys: dict[str, Path]
) -> None:
    """GOV-4 with the deployment's cap (3 s, LANDED_RUNNER_TIME_CAP) on a task that names none:
    the act writes, then hangs; at the cap the act is stopped, what it wrote is read back, and
    the task settles failed saying "time cap". Real seconds: the time-skipping server does not
    move its clock while an activity runs."""
    task = rows_task("cap-hang", db, expect=1, batch="cap-hang")
    task["act"] = {"name": "test.write_then_hang", "input": {}}
    async with _roles(temporal_dev, tmp_path, db, time_cap=3) as roles:
        receipt = await asyncio.wait_for(roles.client.run(task), 60)
        await _replay(roles, "cap-hang")
    assert receipt.verdict == "failed", receipt
    findings = receipt.landed.model_dump().get("findings", []) if receipt.landed else []
    assert any("time cap 0:00:03 reached" in f for f in findings), findings
    assert act_runs(db, "cap-hang") == [(1, "wrote")]  # acted once, never again after the cap
    (proof,) = [p for p in receipt.proof if p.kind == "record"]
    assert proof.result == "pass"  # what the act in flight wrote was read back
