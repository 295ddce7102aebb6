"""The runner's approver configuration as it travels in its routing (GOV-5): the approvers'
public keys, each bound to a person's name, the groups a task may name, and the actor
identities that may never approve.

Part of the wire contract (``Routing.approval``, recorded in history); what is decided with it
(who may approve, whether a signature counts) is ``landed.governance.approvers``.
"""

from __future__ import annotations

from cryptography.exceptions import UnsupportedAlgorithm
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
from pydantic import BaseModel, ConfigDict, Field

from landed.signing import key_id_of

__all__ = ["ApproverKey", "ApproverTrust"]


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
