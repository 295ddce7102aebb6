"""A person's signed decision at the approval gate (GOV-5): what an approver's Ed25519 key signs,
and the checks the workflow's Update validator and ``landed check --trust`` run on it.

The signature binds the decision to one task, one workflow run (the run the task started as,
kept across resets) and one spec digest, so a decision signed for one task cannot be replayed to
another, to a later run of the same id, or to a task resubmitted with other content.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Literal

import orjson
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
from pydantic import AwareDatetime, BaseModel, ConfigDict, Field, ValidationError

from landed.receipts.model import Receipt, run_id_of
from landed.signing import ALGORITHM, KeyPair

__all__ = [
    "DecisionKind",
    "SignedDecision",
    "binding_problem",
    "decision_payload",
    "receipt_approval_problem",
    "same_name",
    "sign_decision",
    "signature_problem",
]

#: Domain separation: an approval's bytes can never be mistaken for a reading or a chain head.
_PURPOSE = "landed.approval.v1"
DecisionKind = Literal["approve", "reject"]


class SignedDecision(BaseModel):
    """A decision as the approver signed it; it travels in the Update and into the receipt
    (``landed.approval.signed``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    task_id: str = Field(min_length=1, max_length=200)
    run_id: str = Field(min_length=1, max_length=200, description="The run the task started as.")
    spec_sha256: str = Field(min_length=1, max_length=200, description="spec_digest() of it.")
    decision: DecisionKind
    by: str = Field(min_length=1, max_length=200)
    at: AwareDatetime
    note: str | None = Field(default=None, max_length=2000)
    key_id: str = Field(pattern=r"^[0-9a-f]{16}$")
    algorithm: str = Field(default=ALGORITHM, max_length=20)
    signature: str = Field(min_length=1, max_length=200, description="base64 Ed25519 signature.")


def same_name(a: str, b: str) -> bool:
    """Names compared as people write them: case and surrounding spaces aside."""
    return a.strip().casefold() == b.strip().casefold()


def decision_payload(
    *,
    task_id: str,
    run_id: str,
    spec_sha256: str,
    decision: str,
    by: str,
    at: datetime,
    note: str | None,
) -> bytes:
    """The exact bytes an approver signs (canonical JSON, sorted keys)."""
    return orjson.dumps(
        {
            "purpose": _PURPOSE,
            "task_id": task_id,
            "run_id": run_id,
            "spec_sha256": spec_sha256,
            "decision": decision,
            "by": by,
            # In UTC with a Z, so a decision that went through JSON and back (the Update, the
            # ledger, an export) yields the same bytes.
            "at": _iso(at),
            "note": note,
        },
        option=orjson.OPT_SORT_KEYS,
    )


def _iso(at: datetime) -> str:
    return orjson.dumps(at.astimezone(UTC), option=orjson.OPT_UTC_Z).decode().strip('"')


def _payload_of(signed: SignedDecision) -> bytes:
    return decision_payload(
        task_id=signed.task_id,
        run_id=signed.run_id,
        spec_sha256=signed.spec_sha256,
        decision=signed.decision,
        by=signed.by,
        at=signed.at,
        note=signed.note,
    )


def sign_decision(
    key: KeyPair,
    *,
    task_id: str,
    run_id: str,
    spec_sha256: str,
    decision: DecisionKind,
    by: str,
    at: datetime,
    note: str | None,
) -> SignedDecision:
    """The decision signed with the approver's key."""
    payload = decision_payload(
        task_id=task_id,
        run_id=run_id,
        spec_sha256=spec_sha256,
        decision=decision,
        by=by,
        at=at,
        note=note,
    )
    return SignedDecision(
        task_id=task_id,
        run_id=run_id,
        spec_sha256=spec_sha256,
        decision=decision,
        by=by,
        at=at,
        note=note,
        key_id=key.key_id,
        signature=base64.b64encode(key.sign(payload)).decode(),
    )


def signature_problem(
    signed: SignedDecision, trusted: Mapping[str, Ed25519PublicKey], *, where: str
) -> str | None:
    """None when a key in ``trusted`` signed exactly this decision; else why not. ``where``
    names the setting that holds the trusted keys (for the fix)."""
    if signed.algorithm != ALGORITHM:
        return f"the decision is signed with {signed.algorithm!r}; landed approvals use {ALGORITHM}"
    public_key = trusted.get(signed.key_id)
    if public_key is None:
        return (
            f"the decision is signed by key {signed.key_id}, which is not a trusted approver key; "
            f"add the approver's .pub file to {where}"
        )
    try:
        raw = base64.b64decode(signed.signature, validate=True)
        public_key.verify(raw, _payload_of(signed))
    except (ValueError, InvalidSignature):
        return (
            f"the decision's signature does not verify with key {signed.key_id}: it was changed "
            "after signing, or signed with another key"
        )
    return None


def binding_problem(
    signed: SignedDecision, *, task_id: str, run_id: str, spec_sha256: str, decision: str
) -> str | None:
    """None when the signed decision is this one (task, run, spec, approve or reject)."""
    if signed.decision != decision:
        return f"the signed decision is {signed.decision!r}, not {decision!r}"
    for what, mine, theirs in (
        ("task", task_id, signed.task_id),
        ("workflow run", run_id, signed.run_id),
        ("spec digest", spec_sha256, signed.spec_sha256),
    ):
        if mine != theirs:
            return (
                f"the decision was signed for {what} {theirs!r}, not {mine!r}: a signed decision "
                "holds for one task run only; sign a new one for this task"
            )
    return None


def receipt_approval_problem(
    receipt: Receipt, trusted: Mapping[str, Ed25519PublicKey]
) -> str | None:
    """Why a receipt's claimed approval is not shown by a trusted approver's signature (None:
    it is, or the receipt claims no approval). What ``landed check --trust`` holds it to."""
    approval = receipt.approval
    gate = getattr(receipt.landed, "approval", None) if receipt.landed is not None else None
    gate = gate if isinstance(gate, dict) else {}
    claimed = (approval.approved_by if approval is not None else None) or (
        gate.get("by") if gate.get("decision") == "approved" else None
    )
    if not claimed:
        return None
    problem = _approval_problem(receipt, str(claimed), gate.get("signed"), trusted)
    return None if problem is None else f"approval by {claimed!r} not verified: {problem}"


def _approval_problem(
    receipt: Receipt, claimed: str, raw: object, trusted: Mapping[str, Ed25519PublicKey]
) -> str | None:
    if raw is None:
        return "the receipt carries no signed decision (landed.approval.signed)"
    try:
        signed = SignedDecision.model_validate(raw)
    except ValidationError as exc:
        return f"the signed decision is malformed: {str(exc).splitlines()[0]}"
    if not trusted:
        return "no approver key is trusted; pass the approvers' .pub files with --trust-approver"
    digest = getattr(receipt.landed, "spec_sha256", None) or ""
    problem = binding_problem(
        signed,
        task_id=receipt.task_id,
        run_id=run_id_of(receipt),
        spec_sha256=str(digest),
        decision="approve",
    ) or signature_problem(signed, trusted, where="--trust-approver")
    if problem is None and not same_name(signed.by, claimed):
        problem = f"the receipt names {claimed!r} as approver, the signed decision {signed.by!r}"
    return problem
