"""Signed approvals (GOV-5) on a real Temporal dev server: only a decision signed by a trusted
approver key for this very task, run and spec opens the gate. Act code holding a Temporal
connection cannot approve (unsigned, forged), nor can an untrusted key or a decision replayed
from another task; the receipt carries the signed decision and `landed check --trust` verifies
it offline (and finds a tampered one)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import orjson
import pytest
from helpers.approvers import approver_keys
from helpers.roles import run_roles
from helpers.sor import act_runs, make_rows_db, rows_task
from helpers.wait import until
from temporalio.client import WorkflowUpdateFailedError

import landed
from landed.cli.check import run_check
from landed.governance.gates import Approve, GateView
from landed.signing import KeyPair, key_id_of, load_public_key
from landed.task.messages import spec_digest
from landed.task.spec import TaskSpec
from landed.temporal.approvals import ApprovalRefused

pytestmark = pytest.mark.timeout(180)


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return make_rows_db(tmp_path / "rows.db")


def _roles(address: str, tmp_path: Path, db: Path) -> Any:
    return run_roles(
        address,
        tmp_path,
        credentials={"rows-db": f"sqlite:///{db}"},
        sources={"rows-db": {"url": f"sqlite:///{db}"}},
        acts=("helpers.acts", "helpers.gate_acts"),
        runner={"approvers": [str(tmp_path / "approvers-trusted")]},
    )


def _gated(task_id: str, db: Path) -> dict[str, Any]:
    return {**rows_task(task_id, db, expect=2, batch=task_id, write=2), "irreversible": "send"}


async def _held(handle: landed.TaskHandle) -> None:
    async def waiting() -> bool:
        return (await handle.progress()).rung == "held"

    await until(f"task {handle.task_id} is held", waiting, timeout=30)


async def test_act_code_cannot_approve_a_held_task_unsigned_or_forged(
    temporal_dev: str, tmp_path: Path, db: Path
) -> None:
    """An act in the actor process connects to Temporal and approves another held task as
    "dana": with no signature, and with a signature it made itself claiming dana's key id.
    Both are refused by the Update's validator; the task stays held and nothing acts."""
    trusted, _keys = approver_keys(tmp_path, ("dana",))
    (dana_pub,) = trusted.glob("*.pub")
    dana_id = key_id_of(load_public_key(dana_pub))
    async with _roles(temporal_dev, tmp_path, db) as roles:
        target = _gated("sig-target", db)
        held = await roles.client.start(target)
        await _held(held)
        answers = []
        for mode in ("unsigned", "forged"):
            attacker = rows_task(f"sig-attack-{mode}", db, expect=1, batch=f"atk-{mode}")
            attacker["act"] = {
                "name": "test.approve_other",
                "input": {
                    "target": "sig-target",
                    "address": temporal_dev,
                    "identity": roles.identities["actor"],
                    "mode": mode,
                    "digest": spec_digest(TaskSpec.model_validate(target)),
                    "dana_key_id": dana_id,
                },
            }
            receipt = await roles.client.run(attacker)
            answers.append(receipt.report or "")
        assert (await held.progress()).rung == "held"
        assert (await held.workflow.query("gate", result_type=GateView)).decision is None
    assert act_runs(db, "sig-target") == []
    assert answers[0].startswith("refused: the decision is unsigned"), answers
    assert answers[1].startswith("refused: the decision's signature does not verify"), answers


async def test_an_untrusted_key_and_a_decision_replayed_from_another_task_are_refused(
    temporal_dev: str, tmp_path: Path, db: Path
) -> None:
    """A key the runner does not trust (even under a trusted person's name) is refused; a
    decision validly signed for one held task and sent to another is refused; both tasks stay
    held until their own signed decision."""
    _, keys = approver_keys(tmp_path, ("dana",))
    stranger = KeyPair.generate()
    async with _roles(temporal_dev, tmp_path, db) as roles:
        first = await roles.client.start(_gated("sig-one", db))
        second = await roles.client.start(_gated("sig-two", db))
        await _held(first)
        await _held(second)
        with pytest.raises(ApprovalRefused, match="not a trusted approver key"):
            await first.approve("dana", key=stranger)
        # dana signs for sig-one; the same signed decision is replayed to sig-two.
        await first.approve("dana", note="for sig-one only", key=keys["dana"])
        gate = await first.workflow.query("gate", result_type=GateView)
        assert gate.decision is not None and gate.decision.signed is not None
        replay = Approve(by="dana", note="for sig-one only", signed=gate.decision.signed)
        with pytest.raises(WorkflowUpdateFailedError) as refused:
            await second.workflow.execute_update("approve", replay, result_type=GateView)
        assert "signed for task 'sig-one', not 'sig-two'" in str(refused.value.cause)
        assert (await second.progress()).rung == "held"
        assert (await first.result()).verdict == "verified"
        assert act_runs(db, "sig-two") == []
        await second.reject("dana", "not needed", key=keys["dana"])
        assert (await second.result()).verdict == "held"


def _check(receipt: dict[str, Any], tmp_path: Path, trust: Path, approvers: Path) -> Any:
    path = tmp_path / f"receipt-{len(list(tmp_path.glob('receipt-*')))}.jsonl"
    path.write_bytes(orjson.dumps(receipt) + b"\n")
    report = path.with_suffix(".out")
    with report.open("w") as out:
        code = run_check(
            str(path), as_json=True, trust=[str(trust)], trust_approver=[str(approvers)], out=out
        )
    (task,) = json.loads(report.read_text())["tasks"]
    return code, task


async def test_a_signed_approval_acts_verifies_and_is_checked_offline(
    temporal_dev: str, tmp_path: Path, db: Path
) -> None:
    """Approved with dana's trusted key: the task acts once, verifies, and its receipt carries
    the signed decision, which `landed check --trust` verifies; a receipt whose approval was
    edited (approver, note, or the run it names) is a GOV-5 finding and not verified."""
    trusted, keys = approver_keys(tmp_path, ("dana",))
    async with _roles(temporal_dev, tmp_path, db) as roles:
        handle = await roles.client.start(_gated("sig-ok", db))
        await _held(handle)
        await handle.approve("dana", note="amount checked", key=keys["dana"])
        receipt = await handle.result()
        verifier_key = roles.public_key
    assert receipt.verdict == "verified" and act_runs(db, "sig-ok") == [(1, "sig-ok")]
    record = receipt.model_dump(mode="json", exclude_none=True)
    signed = record["landed"]["approval"]["signed"]
    assert signed["task_id"] == "sig-ok" and signed["decision"] == "approve"
    assert signed["by"] == "dana" and signed["note"] == "amount checked"
    code, task = _check(record, tmp_path, verifier_key, trusted)
    assert code == 0 and task["proof_level"] == "P3", task
    for path, value in (
        (("approval", "approved_by"), "mallory"),
        (("landed", "approval", "signed", "note"), "edited"),
        (("landed", "approval", "signed", "run_id"), "another-run"),
    ):
        forged = json.loads(json.dumps(record))
        where = forged
        for part in path[:-1]:
            where = where[part]
        where[path[-1]] = value
        code, task = _check(forged, tmp_path, verifier_key, trusted)
        findings = [f for f in task["findings"] if f["rule"] == "GOV-5"]
        assert task["proof_level"] == "P2" and findings, (path, task)
    # No approver keys given: a claimed approval cannot be verified either.
    empty = tmp_path / "no-approvers"
    empty.mkdir()
    stranger = KeyPair.generate()
    stranger.save(empty)
    code, task = _check(record, tmp_path, verifier_key, empty)
    assert task["proof_level"] == "P2", task


async def test_a_task_approved_before_decisions_were_signed_still_replays() -> None:
    """A history recorded by the release before signed approvals (an unsigned approve Update,
    a routing without approver keys) replays on this code: running workflows keep running."""
    from temporalio.client import WorkflowHistory
    from temporalio.worker import Replayer

    from landed.temporal.plugin import landed_plugin
    from landed.workflows.agent_task import AgentTask

    recorded = Path(__file__).parent / "histories" / "agent_task_approved_unsigned.json"
    history = WorkflowHistory.from_json("appr-1", recorded.read_text())
    events = history.events
    assert any(e.HasField("workflow_execution_update_accepted_event_attributes") for e in events)
    replayer = Replayer(workflows=[AgentTask], plugins=[landed_plugin()])
    result = await replayer.replay_workflow(history, raise_on_replay_failure=False)
    assert result.replay_failure is None, result.replay_failure
