"""Signed approvals' pure parts (GOV-5): what an approver's key signs, what the Update's
validator refuses, what the runner loads as its approver keys, and how `landed check --trust`
holds a receipt's approval to its signature (no Temporal)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from landed.cli import app
from landed.governance.approval import (
    SignedDecision,
    receipt_approval_problem,
    sign_decision,
    signature_problem,
)
from landed.governance.approvers import signed_refusal
from landed.receipts.grading import evaluate, unapproved
from landed.receipts.ladder import ProofLevel, Status
from landed.receipts.model import Receipt
from landed.signing import KeyPair, SigningError
from landed.task.trust import ApproverKey, ApproverTrust
from landed.temporal.approver_keys import approver_file_name, load_approvers
from landed.temporal.settings import RunnerSettings

AT = datetime(2026, 12, 4, 5, 30, tzinfo=UTC)
BOUND = {"task_id": "t1", "run_id": "run-1", "spec_sha256": "v1:abc"}


def _signed(key: KeyPair, **change: Any) -> SignedDecision:
    fields: dict[str, Any] = {**BOUND, "decision": "approve", "by": "dana", "at": AT, "note": "ok"}
    return sign_decision(key, **{**fields, **change})


def _trust(key: KeyPair, name: str = "dana") -> ApproverTrust:
    return ApproverTrust(keys=[ApproverKey(name=name, pem=key.public_pem().decode())])


def _refusal(signed: SignedDecision | None, trust: ApproverTrust | None, **change: Any) -> Any:
    args: dict[str, Any] = {**BOUND, "by": "dana", "decision": "approve", **change}
    return signed_refusal(signed, trust=trust, **args)


def test_a_decision_signed_by_a_trusted_key_for_this_task_run_and_spec_is_accepted() -> None:
    dana = KeyPair.generate()
    signed = _signed(dana)
    assert _refusal(signed, _trust(dana)) is None
    # Through JSON and back (the Update, the ledger) it still verifies.
    again = SignedDecision.model_validate_json(signed.model_dump_json())
    assert signature_problem(again, {dana.key_id: dana.public_key}, where="x") is None


@pytest.mark.parametrize(
    ("change", "why"),
    [
        ({"task_id": "t2"}, "signed for task 't1', not 't2'"),
        ({"run_id": "run-2"}, "signed for workflow run 'run-1', not 'run-2'"),
        ({"spec_sha256": "v1:other"}, "signed for spec digest"),
        ({"decision": "reject"}, "signed decision is 'approve', not 'reject'"),
        ({"by": "erin"}, "is 'dana''s approver key, not 'erin''s"),
    ],
)
def test_a_decision_for_another_task_run_spec_kind_or_person_is_refused(
    change: dict[str, Any], why: str
) -> None:
    dana = KeyPair.generate()
    got = _refusal(_signed(dana), _trust(dana), **change)
    assert got is not None and why in got, got


def test_unsigned_untrusted_forged_and_unconfigured_decisions_are_refused() -> None:
    dana, mallory = KeyPair.generate(), KeyPair.generate()
    assert "unsigned" in _refusal(None, _trust(dana))
    assert "not a trusted approver key" in _refusal(_signed(mallory), _trust(dana))
    # Mallory's signature under dana's key id: the signature does not verify.
    forged = _signed(mallory).model_copy(update={"key_id": dana.key_id})
    assert "does not verify" in _refusal(forged, _trust(dana))
    # Edited after signing (the note), by a trusted key: does not verify either.
    edited = _signed(dana).model_copy(update={"note": "changed"})
    assert "does not verify" in _refusal(edited, _trust(dana))
    # Fail closed: a runner with no approver keys approves nothing, and says what to set.
    for trust in (None, ApproverTrust()):
        got = _refusal(_signed(dana), trust)
        assert "trusts no approver key" in got and "LANDED_RUNNER_APPROVERS" in got


def _pub(directory: Path, name: str, key: KeyPair | None = None) -> Path:
    key = key or KeyPair.generate()
    return key.save(directory, approver_file_name(name, key.key_id))[1]


def test_the_runner_loads_named_keys_and_refuses_borrowed_ones(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("LANDED_ACTOR_IDENTITY", raising=False)
    dana = _pub(tmp_path / "dana", "dana")
    erin_key = KeyPair.generate()
    erin = erin_key.save(tmp_path / "erin")[1]  # a plain landed-<id>.pub, named by NAME=PATH
    settings = RunnerSettings(
        approvers=f"{dana.parent},erin={erin}",  # type: ignore[arg-type]
        approver_groups={"finance": ["dana", "erin"]},
        actor_identity="robo-actor",
    )
    trust = load_approvers(settings)
    names = sorted(name for name, _ in trust.public_keys().values())
    assert names == ["dana", "erin"] and trust.actor_identities == ["robo-actor"]
    with pytest.raises(SigningError, match="is the verifier's or the runner's own key"):
        load_approvers(settings, [erin_key.key_id])
    with pytest.raises(SigningError, match="does not say whose key it is"):
        load_approvers(RunnerSettings(approvers=[str(erin)]))
    robo = _pub(tmp_path / "robo", "robo-actor")
    with pytest.raises(SigningError, match="is the actor's identity"):
        load_approvers(RunnerSettings(approvers=[str(robo)], actor_identity="robo-actor"))
    renamed = dana.with_name(approver_file_name("dana", "0" * 16) + ".pub")
    dana.rename(renamed)
    with pytest.raises(SigningError, match="not the 0000000000000000 its name says"):
        load_approvers(RunnerSettings(approvers=[str(renamed)]))


def test_keys_new_makes_an_approver_key_named_for_its_person(tmp_path: Path) -> None:
    runner = CliRunner()
    made = runner.invoke(
        app, ["keys", "new", "--role", "approver", "--name", "dana", "--out", str(tmp_path)]
    )
    assert made.exit_code == 0, made.output
    (pub,) = tmp_path.glob("approver-dana-*.pub")
    assert (tmp_path / pub.name.replace(".pub", ".key")).stat().st_mode & 0o777 == 0o600
    assert load_approvers(RunnerSettings(approvers=[str(pub)])).keys[0].name == "dana"
    for bad in (["--role", "approver"], ["--role", "approver", "--name", "actor@x"]):
        got = runner.invoke(app, ["keys", "new", *bad, "--out", str(tmp_path / "x")])
        assert got.exit_code == 2, got.output


def _approved_receipt(signed: SignedDecision | None, by: str = "dana") -> Receipt:
    approval: dict[str, Any] = {"kind": "send", "decision": "approved", "by": by}
    if signed is not None:
        approval["signed"] = signed.model_dump(mode="json")
    return Receipt.model_validate(
        {
            "task_id": "t1",
            "claimed_status": "done",
            "approval": {"required": True, "approved_by": by},
            "landed": {"run_id": "run-1", "spec_sha256": "v1:abc", "approval": approval},
        }
    )


def test_check_holds_a_receipts_approval_to_a_trusted_signature() -> None:
    dana, mallory = KeyPair.generate(), KeyPair.generate()
    trusted = {dana.key_id: dana.public_key}
    assert receipt_approval_problem(_approved_receipt(_signed(dana)), trusted) is None
    for receipt, why in (
        (_approved_receipt(None), "carries no signed decision"),
        (_approved_receipt(_signed(mallory)), "not a trusted approver key"),
        (_approved_receipt(_signed(dana), by="mallory"), "names 'mallory' as approver"),
        (_approved_receipt(_signed(dana, run_id="run-0")), "signed for workflow run"),
    ):
        got = receipt_approval_problem(receipt, trusted)
        assert got is not None and why in got, got
    assert "--trust-approver" in (
        receipt_approval_problem(_approved_receipt(_signed(dana)), {}) or ""
    )
    plain = Receipt.model_validate({"task_id": "t2", "claimed_status": "done"})
    assert receipt_approval_problem(plain, {}) is None  # claims no approval: nothing to check


def test_an_unverified_approval_caps_the_grade_at_an_artifact() -> None:
    graded = evaluate(_approved_receipt(None))._replace(
        proof_level=ProofLevel.P3, proven_status=Status.VERIFIED, meets_bar=True, done_at_p3=True
    )
    capped = unapproved(graded, "approval not verified")
    assert capped.proof_level == ProofLevel.P2 and capped.proven_status == Status.BUILT
    assert not capped.done_at_p3 and ("GOV-5", "approval not verified") in capped.findings


def test_check_refuses_approver_keys_without_verifier_keys(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    path.write_text('{"task_id": "t", "claimed_status": "done"}\n')
    got = CliRunner().invoke(app, ["check", str(path), "--trust-approver", str(tmp_path)])
    assert got.exit_code == 3 and "with --trust too" in " ".join(got.output.split())
