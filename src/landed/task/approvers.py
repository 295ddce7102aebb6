"""Who may approve, as the runner's operator configured it (GOV-5): the approvers' public keys,
each bound to a person's name, the groups a task's ``approval.approver`` may name, and the actor
identities that may never approve. Pure: the runner reads the files (``landed.temporal.
approver_keys``) and hands this over in its routing, recorded in history.
"""

from __future__ import annotations

from collections.abc import Mapping

from cryptography.exceptions import UnsupportedAlgorithm
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
from pydantic import BaseModel, ConfigDict, Field

from landed.signing import key_id_of
from landed.task.approval_sig import (
    SignedDecision,
    binding_problem,
    same_name,
    signature_problem,
)

__all__ = [
    "APPROVERS_SETTING",
    "ApproverKey",
    "ApproverTrust",
    "is_actor",
    "same_name",
    "signed_refusal",
]

#: Where the operator configures approver keys (named in every refusal that needs one).
APPROVERS_SETTING = "LANDED_RUNNER_APPROVERS"
_HOW = (
    "make one with `landed keys new --role approver --name NAME` and add its .pub file to "
    f"the runner's {APPROVERS_SETTING}"
)


class ApproverKey(BaseModel):
    """One approver's public key and the person it stands for."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    name: str = Field(min_length=1, max_length=200)
    pem: str = Field(min_length=1, max_length=4096)


class ApproverTrust(BaseModel):
    """The runner's approver configuration, carried in its routing."""

    model_config = ConfigDict(extra="forbid")
    keys: list[ApproverKey] = Field(default_factory=list)
    groups: dict[str, list[str]] = Field(
        default_factory=dict, description="A group a task may name as its approver -> names."
    )
    actor_identities: list[str] = Field(
        default_factory=list, description="The actor role's configured identities."
    )

    def public_keys(self) -> dict[str, tuple[str, Ed25519PublicKey]]:
        """key id -> (name, key); a PEM that is not an Ed25519 public key is left out (fewer
        trusted keys only ever refuse more)."""
        out: dict[str, tuple[str, Ed25519PublicKey]] = {}
        for entry in self.keys:
            try:
                key = serialization.load_pem_public_key(entry.pem.encode())
            except (ValueError, TypeError, UnsupportedAlgorithm):
                continue
            if isinstance(key, Ed25519PublicKey):
                out[key_id_of(key)] = (entry.name, key)
        return out


def is_actor(name: str, actors: list[str]) -> bool:
    """The actor role, by a configured or seen identity, or by the ``actor@host:pid`` form every
    actor worker takes when none is configured (so it holds before the first act too)."""
    return name.strip().casefold().startswith("actor@") or any(same_name(name, a) for a in actors)


def may_approve(name: str, approver: str | None, groups: Mapping[str, list[str]]) -> bool:
    """Whether ``name`` is the task's named approver or in the group it names (any: None)."""
    if not approver:
        return True
    members = next((m for g, m in groups.items() if same_name(g, approver)), None)
    if members is not None:
        return any(same_name(name, m) for m in members)
    return same_name(name, approver)


def signed_refusal(
    signed: SignedDecision | None,
    *,
    by: str,
    decision: str,
    trust: ApproverTrust | None,
    task_id: str,
    run_id: str,
    spec_sha256: str,
) -> str | None:
    """Why a decision's signature is refused (None: a trusted approver key signed exactly this
    decision, for this task, run and spec, under the name ``by``)."""
    if trust is None or not trust.keys:
        return (
            f"this runner trusts no approver key, so task {task_id!r} cannot be approved or "
            f"rejected: {_HOW}, restart the runner, and submit the task again"
        )
    if signed is None:
        return (
            "the decision is unsigned; a decision counts only when signed with an approver's "
            f"key: `landed approve TASK --by NAME --key APPROVER.key` ({_HOW})"
        )
    keys = trust.public_keys()
    by_id = {kid: key for kid, (_, key) in keys.items()}
    problem = binding_problem(
        signed, task_id=task_id, run_id=run_id, spec_sha256=spec_sha256, decision=decision
    ) or signature_problem(signed, by_id, where=f"the runner's {APPROVERS_SETTING}")
    if problem is not None:
        return problem
    holder = keys[signed.key_id][0]
    if not (same_name(holder, by) and same_name(holder, signed.by)):
        return (
            f"key {signed.key_id} is {holder!r}'s approver key, not {by!r}'s: decide with --by "
            f"{holder!r}, or with your own key"
        )
    return None
