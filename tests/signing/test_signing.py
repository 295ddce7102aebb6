"""Signed observations: a valid signature survives the ledger's JSON; any edit to it fails."""

from __future__ import annotations

import base64
import hashlib
import io
import stat
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from landed.ledger.base import canonical_json
from landed.probes.contract import Evidence, Observation, Outcome
from landed.receipts.ladder import ProofLevel
from landed.receipts.model import LandedExtension, ProofItem, Receipt
from landed.signing import (
    KEY_FILE_MAX_BYTES,
    KeyPair,
    SigningError,
    TrustStore,
    check_proof,
    key_id_of,
    load_public_key,
    sign_proof,
    verify_proof,
)

AT = datetime(2026, 11, 7, 1, 0, 0, 123456, tzinfo=UTC)


def observation(outcome: Outcome = Outcome.PASS, value: Any = 45) -> Observation:
    return Observation(
        outcome=outcome,
        expectation="count(45)",
        kind="record",
        source="orders-db",
        observer="verifier-1",
        observed_at=AT,
        duration_ms=3.25,
        evidence=Evidence(text=str(value), total_bytes=2, sha256=hashlib.sha256(b"45").hexdigest()),
        value=value,
    )


def signed_receipt(
    key: KeyPair,
    task_id: str = "insert-rows",
    attempt: int = 2,
    obs: Observation | None = None,
    *,
    phase: str = "after",
    run_id: str = "run-a",
) -> Receipt:
    obs = obs or observation()
    proof = ProofItem(
        kind="record",
        ref="orders-db:select count(*) from orders where batch = 123",
        expect="count(45)",
        checked_by="verifier-1",
        checked_at=AT,
        result=str(obs.outcome),
    )
    proof = sign_proof(
        key,
        task_id=task_id,
        attempt=attempt,
        proof=proof,
        observation=obs,
        phase=phase,
        run_id=run_id,
    )
    return Receipt(
        task_id=task_id,
        owner="agent-a",
        claimed_status="done",
        proof=[proof],
        verdict="verified",
        verdict_by="runner",
        landed=LandedExtension(attempt=attempt, key_id=key.key_id, run_id=run_id),
    )


def roundtrip(receipt: Receipt) -> Receipt:
    """Through the ledger's stored form and back, as `landed receipts export` hands it on."""
    return Receipt.model_validate(orjson.loads(canonical_json(receipt)))


@pytest.fixture
def key() -> KeyPair:
    return KeyPair.generate()


def test_key_id_is_16_hex_of_sha256_over_the_raw_public_key(key: KeyPair) -> None:
    raw = key.public_key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    assert key.key_id == hashlib.sha256(raw).hexdigest()[:16]
    assert len(key.key_id) == 16
    assert key.key_id != KeyPair.generate().key_id


def test_saved_private_key_is_0600_and_both_halves_load_back(key: KeyPair, tmp_path: Path) -> None:
    private, public = key.save(tmp_path / "keys")
    assert stat.S_IMODE(private.stat().st_mode) == 0o600
    assert private.name == f"landed-{key.key_id}.key" and public.suffix == ".pub"
    assert KeyPair.load(private).key_id == key.key_id
    assert key_id_of(load_public_key(public)) == key.key_id
    with pytest.raises(SigningError, match="already exists"):
        key.save(tmp_path / "keys")


def test_a_signed_proof_verifies_after_the_ledger_json_roundtrip(key: KeyPair) -> None:
    receipt = roundtrip(signed_receipt(key))
    trusted = TrustStore([key.public_key])
    assert check_proof(receipt, receipt.proof[0], trusted) is None
    assert trusted.signature_ok(receipt, receipt.proof[0])


def _flip_result(r: dict[str, Any]) -> None:
    r["proof"][0]["result"] = "mismatch"


def _edit_observation(r: dict[str, Any]) -> None:
    r["proof"][0]["landed"]["observation"]["value"] = 22


def _edit_evidence(r: dict[str, Any]) -> None:
    r["proof"][0]["landed"]["observation"]["evidence"]["text"] = "22"


def _move_task(r: dict[str, Any]) -> None:
    r["task_id"] = "another-task"


def _move_attempt(r: dict[str, Any]) -> None:
    r["landed"]["attempt"] = 1


def _edit_ref(r: dict[str, Any]) -> None:
    r["proof"][0]["ref"] = "orders-db:select 45"


def _edit_checked_by(r: dict[str, Any]) -> None:
    r["proof"][0]["checked_by"] = "runner"


def _edit_checked_at(r: dict[str, Any]) -> None:
    r["proof"][0]["checked_at"] = "2026-11-08T01:00:00Z"


def _drop_signature(r: dict[str, Any]) -> None:
    del r["proof"][0]["landed"]["signature"]


def _drop_landed(r: dict[str, Any]) -> None:
    del r["proof"][0]["landed"]


def _garble_signature(r: dict[str, Any]) -> None:
    r["proof"][0]["landed"]["signature"]["signature"] = "not base64!"


def _unknown_field_in_observation(r: dict[str, Any]) -> None:
    r["proof"][0]["landed"]["observation"]["note"] = "trust me"


def _edit_phase(r: dict[str, Any]) -> None:
    r["proof"][0]["landed"]["phase"] = "before"


def _edit_proof_run(r: dict[str, Any]) -> None:
    r["proof"][0]["landed"]["run_id"] = "run-b"


def _move_run(r: dict[str, Any]) -> None:
    r["landed"]["run_id"] = "run-b"


def _drop_proof_run(r: dict[str, Any]) -> None:
    del r["proof"][0]["landed"]["run_id"]


@pytest.mark.parametrize(
    ("tamper", "reason"),
    [
        (_flip_result, "changed after signing"),
        (_edit_observation, "changed after signing"),
        (_edit_evidence, "changed after signing"),
        (_move_task, "changed after signing"),
        (_move_attempt, "changed after signing"),
        (_edit_ref, "changed after signing"),
        (_edit_checked_by, "changed after signing"),
        (_edit_checked_at, "changed after signing"),
        (_drop_signature, "no signature"),
        (_drop_landed, "no signature"),
        (_garble_signature, "malformed"),
        (_unknown_field_in_observation, "malformed"),
        (_edit_phase, "changed after signing"),
        (_edit_proof_run, "changed after signing"),
        (_drop_proof_run, "changed after signing"),
        (_move_run, "carried over from another run"),
    ],
)
def test_any_edit_to_the_signed_claim_fails(
    key: KeyPair, tamper: Callable[[dict[str, Any]], None], reason: str
) -> None:
    data = orjson.loads(canonical_json(signed_receipt(key)))
    tamper(data)
    receipt = Receipt.model_validate(data)
    trusted = TrustStore([key.public_key])
    found = check_proof(receipt, receipt.proof[0], trusted)
    assert found is not None and reason in found
    assert not verify_proof(receipt, receipt.proof[0], trusted)


def test_a_signature_copied_onto_another_task_fails(key: KeyPair) -> None:
    good = signed_receipt(key, task_id="a")
    other = signed_receipt(key, task_id="b", obs=observation(Outcome.MISMATCH, value=22))
    forged = other.model_copy(update={"proof": [good.proof[0]]})
    assert not verify_proof(forged, forged.proof[0], TrustStore([key.public_key]))
    assert verify_proof(good, good.proof[0], TrustStore([key.public_key]))


def test_a_signed_pre_read_is_never_a_read_back(key: KeyPair) -> None:
    """The verifier signs its before-state reads too; one that passed (the outcome already
    held) must not stand in for this run's read-back after the act."""
    before = signed_receipt(key, phase="before")
    found = check_proof(before, before.proof[0], TrustStore([key.public_key]))
    assert found is not None and "'before' reading" in found
    assert not verify_proof(before, before.proof[0], TrustStore([key.public_key]))


def test_a_reading_from_another_run_fails_in_this_run(key: KeyPair) -> None:
    earlier = signed_receipt(key, run_id="run-1")
    now = signed_receipt(key, run_id="run-2", obs=observation(Outcome.VACUOUS))
    forged = now.model_copy(update={"proof": [earlier.proof[0]]})
    found = check_proof(forged, forged.proof[0], TrustStore([key.public_key]))
    assert found is not None and "another run" in found
    assert verify_proof(earlier, earlier.proof[0], TrustStore([key.public_key]))


def test_unknown_key_fails_and_a_forger_reusing_a_trusted_key_id_fails(key: KeyPair) -> None:
    forger = KeyPair.generate()
    receipt = signed_receipt(forger)
    found = check_proof(receipt, receipt.proof[0], TrustStore([key.public_key]))
    assert found is not None and f"key {forger.key_id} is not trusted" in found
    # The forger claims the trusted key id and recomputes the digest, but cannot sign for it.
    data = orjson.loads(canonical_json(receipt))
    data["proof"][0]["landed"]["signature"]["key_id"] = key.key_id
    forged = Receipt.model_validate(data)
    found = check_proof(forged, forged.proof[0], TrustStore([key.public_key]))
    assert found is not None and "does not verify" in found


def test_resigning_with_the_trusted_key_is_the_only_way_to_change_the_claim(key: KeyPair) -> None:
    receipt = signed_receipt(key, obs=observation(Outcome.MISMATCH, value=22))
    assert verify_proof(receipt, receipt.proof[0], TrustStore([key.public_key]))
    assert receipt.proof[0].result == "mismatch"


def test_a_pass_over_a_signed_non_pass_observation_fails(key: KeyPair) -> None:
    # The verifier itself signed a contradiction (result pass, observation mismatch): fail closed.
    proof = ProofItem(kind="record", ref="r", checked_by="verifier-1", checked_at=AT, result="pass")
    obs = observation(Outcome.MISMATCH, value=22)
    proof = sign_proof(key, task_id="t", attempt=1, proof=proof, observation=obs)
    receipt = Receipt(task_id="t", claimed_status="done", proof=[proof])
    found = check_proof(receipt, proof, TrustStore([key.public_key]))
    assert found is not None and "signed observation says mismatch" in found


@pytest.mark.parametrize("result", ["PASS", " Pass "])
def test_a_pass_in_any_case_over_a_signed_non_pass_observation_fails(
    key: KeyPair, result: str
) -> None:
    """The grader reads "PASS" as a pass: so must the signature check."""
    proof = ProofItem(kind="record", ref="r", checked_by="verifier-1", checked_at=AT, result=result)
    obs = observation(Outcome.MISMATCH, value=22)
    proof = sign_proof(key, task_id="t", attempt=1, proof=proof, observation=obs)
    receipt = Receipt(task_id="t", claimed_status="done", proof=[proof])
    found = check_proof(receipt, proof, TrustStore([key.public_key]))
    assert found is not None and "signed observation says mismatch" in found


def test_signature_carries_key_id_algorithm_and_digest(key: KeyPair) -> None:
    sig = signed_receipt(key).proof[0].landed["signature"]  # type: ignore[index]
    assert sig["key_id"] == key.key_id and sig["algorithm"] == "ed25519"
    assert len(base64.b64decode(sig["signature"])) == 64
    assert len(sig["payload_sha256"]) == 64


def test_trust_store_loads_files_and_directories_and_refuses_private_keys(
    key: KeyPair, tmp_path: Path
) -> None:
    private, public = key.save(tmp_path / "a")
    _, other_public = KeyPair.generate().save(tmp_path / "b")
    store = TrustStore.load([public, tmp_path / "b"])
    assert set(store) == {key.key_id, key_id_of(load_public_key(other_public))}
    with pytest.raises(SigningError, match="is a private key"):
        TrustStore.load([private])
    garbage = tmp_path / "garbage.pub"
    garbage.write_bytes(b"\x00\xffnot a key")
    with pytest.raises(SigningError, match="not a PEM public key"):
        TrustStore.load([garbage])
    with pytest.raises(SigningError, match="cannot read"):
        TrustStore.load([tmp_path / "missing.pub"])
    (tmp_path / "empty").mkdir()
    with pytest.raises(SigningError, match=r"no \.pub files"):
        TrustStore.load([tmp_path / "empty"])


def test_a_non_ed25519_public_key_is_refused(tmp_path: Path) -> None:
    rsa_pub = rsa.generate_private_key(public_exponent=65537, key_size=1024).public_key()
    path = tmp_path / "rsa.pub"
    path.write_bytes(
        rsa_pub.public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )
    )
    with pytest.raises(SigningError, match="Ed25519 only"):
        load_public_key(path)


def test_a_key_path_that_never_ends_is_refused_after_a_bounded_read(tmp_path: Path) -> None:
    # /dev/zero would otherwise be buffered until memory runs out.
    with pytest.raises(SigningError, match="too large for a public key"):
        load_public_key("/dev/zero")
    big = tmp_path / "big.key"
    big.write_bytes(b"#" * (KEY_FILE_MAX_BYTES + 1))
    with pytest.raises(SigningError, match="too large for a private key"):
        KeyPair.load(big)


# --- unsigned fields under --trust (P4 and revenue) ---------------------------------------------


class _Sink:
    def __init__(self) -> None:
        self.grades: dict[str, Any] = {}

    def task(self, line: int, record: Any, grade: Any) -> None:
        self.grades[record.task_id] = grade

    def invalid(self, item: Any) -> None:
        raise AssertionError(item)


def _payment_receipt(key: KeyPair, task_id: str, observed: Any) -> dict[str, Any]:
    obs = Observation(
        outcome=Outcome.PASS,
        expectation="equals('succeeded')",
        kind="payment",
        source="payments",
        observer="verifier-1",
        observed_at=AT,
        duration_ms=1.0,
        value=observed,
    )
    proof = ProofItem(
        kind="payment",
        ref="payments:pay_123",
        expect="equals('succeeded')",
        checked_by="verifier-1",
        checked_at=AT,
        result="pass",
    )
    proof = sign_proof(key, task_id=task_id, attempt=1, proof=proof, observation=obs)
    receipt = Receipt(task_id=task_id, owner="agent-a", claimed_status="reconciled", proof=[proof])
    return orjson.loads(canonical_json(receipt))


def _check(lines: list[dict[str, Any]], key: KeyPair | None) -> tuple[_Sink, Any]:
    from landed.receipts.check import check_stream

    sink = _Sink()
    data = b"".join(orjson.dumps(line) + b"\n" for line in lines)
    check = TrustStore([key.public_key]).signature_ok if key is not None else None
    card = check_stream(io.BytesIO(data), sink, signature_ok=check)
    return sink, card


def test_trust_unsigned_business_outcome_and_revenue_cannot_reach_p4(key: KeyPair) -> None:
    # The review's tamper: a receipt with a signed P3 read-back (a row count) whose unsigned
    # fields are edited after settling: business_outcome.verified, revenue, status, report.
    tampered = orjson.loads(canonical_json(signed_receipt(key)))
    tampered.update(
        claimed_status="reconciled",
        verdict=None,
        report="Reconciled against the ledger.",
        business_outcome={"class": "payment", "verified": True},
        landed={**tampered["landed"], "revenue_usd": 1_000_000.0},
    )
    # Without --trust the checker has only the receipt's word to go on.
    blind, blind_card = _check([tampered], None)
    assert blind.grades["insert-rows"].proof_level is ProofLevel.P4
    assert blind_card.verified_revenue_usd == 1_000_000.0
    # Under --trust: the signed read-back still counts (P3), the unsigned rest does not.
    sink, card = _check([tampered], key)
    graded = sink.grades["insert-rows"]
    assert graded.proof_level is ProofLevel.P3 and not graded.meets_bar
    messages = " ".join(message for _, message in graded.findings)
    assert "business_outcome.verified is not signed" in messages
    assert "landed.revenue_usd" in messages
    assert card.verified_revenue_usd == 0.0


def test_trust_p4_and_revenue_need_a_signed_payment_that_observed_the_amount(
    key: KeyPair,
) -> None:
    paid = _payment_receipt(key, "paid", 1200)
    paid.update(business_outcome={"class": "payment", "verified": True})
    paid["landed"] = {**paid.get("landed", {}), "revenue_usd": 1200.0}
    # Signatures bind the task id: a second task is signed for its own.
    inflated = _payment_receipt(key, "inflated", 1200)
    inflated.update(
        business_outcome={"class": "payment", "verified": True},
        landed={**inflated.get("landed", {}), "revenue_usd": 1_000_000.0},
    )
    wrong_class = _payment_receipt(key, "wrong-class", 1200)
    wrong_class.update(business_outcome={"class": "sent_log", "verified": True})
    sink, card = _check([paid, inflated, wrong_class], key)
    assert sink.grades["paid"].proof_level is ProofLevel.P4 and sink.grades["paid"].meets_bar
    assert sink.grades["inflated"].proof_level is ProofLevel.P4  # the payment itself is signed
    assert sink.grades["wrong-class"].proof_level is ProofLevel.P3
    assert card.verified_revenue_usd == 1200.0  # only the amount a signed payment observed


def test_a_malformed_signature_or_observation_is_a_reason_never_an_exception(
    key: KeyPair,
) -> None:
    # The workflow holds pre-reads to check_reading: an exception there would fail its workflow
    # task on every retry instead of refusing the reading.
    good = orjson.loads(signed_receipt(key, attempt=1, run_id="run-1").model_dump_json())
    trusted = TrustStore([key.public_key])
    cases = {
        "a non-ASCII signature": ("signature", "signature", "é"),
        "a value past 64 bits": ("observation", "value", 2**64),
    }
    for label, (part, field, value) in cases.items():
        data = orjson.loads(orjson.dumps(good))
        data["proof"][0]["landed"][part][field] = value
        receipt = Receipt.model_validate(data)
        why = check_proof(receipt, receipt.proof[0], trusted)
        assert why is not None, label
        assert "malformed" in why or "signed form" in why, (label, why)
        assert not verify_proof(receipt, receipt.proof[0], trusted), label


def test_a_key_file_of_an_unknown_algorithm_or_many_keys_is_refused(
    key: KeyPair, tmp_path: Path
) -> None:
    der = key.public_key.public_bytes(
        serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    unknown = der.replace(bytes.fromhex("06032b6570"), bytes.fromhex("06032b6563"))
    pem = (
        b"-----BEGIN PUBLIC KEY-----\n"
        + base64.encodebytes(unknown)
        + b"-----END PUBLIC KEY-----\n"
    )
    (tmp_path / "unknown.pub").write_bytes(pem)
    with pytest.raises(SigningError, match="not a PEM public key"):
        load_public_key(tmp_path / "unknown.pub")
    private = key.private_key.private_bytes(
        serialization.Encoding.DER,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    odd = private.replace(bytes.fromhex("06032b6570"), bytes.fromhex("06032b6563"))
    (tmp_path / "unknown.key").write_bytes(
        b"-----BEGIN PRIVATE KEY-----\n" + base64.encodebytes(odd) + b"-----END PRIVATE KEY-----\n"
    )
    with pytest.raises(SigningError, match="not an unencrypted PEM private key"):
        KeyPair.load(tmp_path / "unknown.key")
    other = KeyPair.generate()
    (tmp_path / "both.pub").write_bytes(key.public_pem() + other.public_pem())
    with pytest.raises(SigningError, match="2 PEM blocks"):
        TrustStore.load([tmp_path / "both.pub"])


def test_the_plan_step_and_length_are_signed(key: KeyPair) -> None:
    proof = ProofItem(
        kind="record",
        ref="orders-db:select count(*) from orders",
        expect="count(45)",
        checked_by="verifier-1",
        checked_at=AT,
        result="pass",
    )
    signed = sign_proof(
        key, task_id="t", attempt=1, proof=proof, observation=observation(), run_id="r",
        step=0, steps=2,
    )  # fmt: skip
    receipt = Receipt(
        task_id="t", claimed_status="done", proof=[signed], landed=LandedExtension(run_id="r")
    )
    trusted = TrustStore([key.public_key])
    assert check_proof(receipt, signed, trusted) is None
    landed = dict(signed.landed or {})
    for change in ({"steps": 1}, {"step": 1}, {"step": True}, {"step": None, "steps": None}):
        edited = {**landed, **change}
        edited = {k: v for k, v in edited.items() if v is not None}
        item = signed.model_copy(update={"landed": edited})
        assert check_proof(receipt.model_copy(update={"proof": [item]}), item, trusted), change
