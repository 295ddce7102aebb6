"""Building a receipt from a task, its act report and the verifier's proof items (pure code)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from cryptography.exceptions import UnsupportedAlgorithm
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from landed.probes.contract import Contract, Observation
from landed.receipts.ladder import READ_BACK_KINDS
from landed.receipts.model import Approval, BusinessOutcome, LandedExtension, ProofItem, Receipt
from landed.signing import TrustStore
from landed.task.messages import ActReport
from landed.task.spec import TaskSpec, dod_proof_kind
from landed.util.redact import redact_secret_shapes

__all__ = [
    "actor_artifact",
    "assemble_receipt",
    "describe_probe",
    "proof_item",
    "trust_from_pems",
    "unknown_write_report",
]


def describe_probe(contract: Contract) -> str:
    """A short, human-readable reference for where the read-back looked."""
    probe = contract.probe
    source = getattr(probe, "source", None)
    prefix = f"{source}:" if source else ""
    for attr in ("query", "url", "path", "payment_id", "message_id", "call_id", "ref"):
        value = getattr(probe, attr, None)
        if isinstance(value, str) and value:
            return f"{prefix}{value}"
    argv = getattr(probe, "argv", None)
    if isinstance(argv, list):
        return prefix + " ".join(str(a) for a in argv)
    return prefix + probe.kind


def proof_item(
    contract: Contract,
    observation: Observation,
    *,
    checked_by: str,
    before: Observation | None = None,
) -> ProofItem:
    """The receipt entry for one read-back, as the verifier observed it (before signing)."""
    extra: dict[str, Any] = {
        "action": contract.action,
        "probe": contract.probe.model_dump(mode="json"),
        "expectation": contract.expect.model_dump(mode="json"),
        "observation": observation.model_dump(mode="json"),
    }
    if before is not None:
        extra["before"] = before.model_dump(mode="json")
    return ProofItem(
        kind=dod_proof_kind(contract.probe.kind),
        ref=describe_probe(contract),
        expect=observation.expectation,
        checked_by=checked_by,
        checked_at=observation.observed_at,
        result=observation.outcome.value,
        landed=extra,
    )


def actor_artifact(item: ProofItem, actor: str | None) -> ProofItem:
    """An item from the act's report, as what it is: the actor's own citation.

    Whatever it says, the actor checked it: ``checked_by`` is the actor, its ``landed`` data
    (a signature, an observation) is dropped, since a signed reading copied from elsewhere (a
    pre-read, another run) must not pass for this run's read-back, and a read-back kind
    becomes an ``assertion``: only the verifier's own readings are read-backs (DOD-2).
    """
    kind = item.kind
    update: dict[str, Any] = {"checked_by": actor or "actor", "landed": None}
    if kind.strip().lower() in READ_BACK_KINDS:
        update["kind"] = "assertion"
        update["ref"] = f"{kind} (cited by the actor): {item.ref or ''}".rstrip(": ")
    return item.model_copy(update=update)


def unknown_write_report() -> ActReport:
    """What stands in for the act's report when its write ended in an error or timeout.

    The agent never got to claim anything, so the claim is the lowest honest word (``planned``)
    and the verdict rests on what the verifier read back (DOD-10). The error itself goes to
    ``landed.act_error``, not into the report: these are not the agent's words.
    """
    return ActReport(
        claimed_status="planned",
        report="The act's write ended without a response; the outcome was read back instead "
        "of running the act again (DOD-10).",
    )


def assemble_receipt(
    spec: TaskSpec,
    report: ActReport,
    proofs: list[ProofItem],
    *,
    attempt: int,
    key_id: str | None = None,
    settled_at: datetime | None = None,
    extra: dict[str, Any] | None = None,
) -> Receipt:
    """The receipt so far: the agent's artifacts (checked by the actor) then the read-backs."""
    artifacts = [actor_artifact(a, report.actor) for a in report.artifacts]
    business = (
        BusinessOutcome.model_validate(
            {"class": spec.business_outcome_class, "ref": spec.target, "verified": False}
        )
        if spec.business_outcome_class
        else None
    )
    extra = dict(extra or {})
    if isinstance(extra.get("act_error"), str):
        extra["act_error"] = redact_secret_shapes(extra["act_error"])
    landed = LandedExtension.model_validate(
        {
            "attempt": attempt,
            "key_id": key_id,
            "loop": spec.loop,
            "idempotency_key": spec.idempotency_key,
            "actor": report.actor,
            # What count, at_least and equals meant when this receipt's plan was judged; a
            # receipt without it is from before meanings were marked (meaning 1).
            **({"expect_meaning": spec.expect_meaning} if spec.expect_meaning is not None else {}),
            **extra,
        }
    )
    return Receipt(
        task_id=spec.task_id,
        owner=spec.owner,
        outcome=spec.outcome,
        target=spec.target,
        claimed_status=report.claimed_status,
        # The agent's own text: an act that printed a key or token must not have it kept in
        # the append-only ledger for ever (configured secrets are the verifier's to redact).
        report=redact_secret_shapes(report.report),
        exit_code=report.exit_code,
        proof=[*artifacts, *proofs],
        approval=Approval(
            required=spec.approval.required,
            approved_by=spec.approval.approved_by,
            approved_at=spec.approval.approved_at,
        ),
        business_outcome=business,
        cost=report.cost,
        settled_at=settled_at,
        landed=landed,
    )


def trust_from_pems(pems: list[str]) -> TrustStore:
    """The runner's trusted verifier keys, from PEM text (what the runner's routing carries).

    A PEM that is not an Ed25519 public key is skipped: trusting fewer keys only ever makes
    fewer proofs count, never more.
    """
    keys: list[Ed25519PublicKey] = []
    for pem in pems:
        try:
            key = serialization.load_pem_public_key(pem.encode())
        except (ValueError, TypeError, UnsupportedAlgorithm):
            continue
        if isinstance(key, Ed25519PublicKey):
            keys.append(key)
    return TrustStore(keys)
