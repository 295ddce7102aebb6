"""The DoD v1.0 receipt as pydantic models, with landed's additions under one ``landed`` key."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from landed.receipts import plain

__all__ = [
    "Approval",
    "BusinessOutcome",
    "Cost",
    "LandedExtension",
    "ProofItem",
    "Receipt",
    "SignedObservation",
    "attempt_of",
    "run_id_of",
]

DOD_VERSION = "1.0"


class _Open(BaseModel):
    """Accepts fields it does not know and keeps them, so a receipt round-trips unchanged."""

    model_config = ConfigDict(extra="allow", populate_by_name=True)


class SignedObservation(BaseModel):
    """A verifier's signature over what it observed for one proof (see the signing module)."""

    model_config = ConfigDict(extra="forbid")

    key_id: str
    algorithm: str = "ed25519"
    payload_sha256: str
    signature: str


class ProofItem(_Open):
    """One cited proof: a read-back, an artifact, or (any other kind) an assertion."""

    kind: str
    ref: str | None = None
    expect: Any = None
    checked_by: str | None = None
    checked_at: datetime | None = None
    result: str | None = None
    landed: dict[str, Any] | None = Field(
        default=None, description="landed's additions for this proof (observation, signature)."
    )


class Approval(_Open):
    required: bool = False
    approved_by: str | None = None
    approved_at: datetime | None = None


class BusinessOutcome(_Open):
    # Read from "class" only: a "class_" key is an unknown field kept as it is, as the
    # checker's fast reader reads it, however its JSON spells the key ("class\u005f").
    model_config = ConfigDict(extra="allow", populate_by_name=False)

    class_: str | None = Field(default=None, alias="class")
    ref: str | None = None
    verified: bool = False


class Cost(_Open):
    input_tokens: int | None = None
    output_tokens: int | None = None
    usd: float | None = None


class LandedExtension(_Open):
    """Everything landed adds to a receipt; other DoD readers ignore this one key."""

    attempt: int = 1
    rung: str | None = None
    revenue_usd: float | None = Field(
        default=None, description="Dollars traced to this task's business outcome (P4 only)."
    )
    key_id: str | None = None
    loop: str | None = None


class Receipt(_Open):
    """One settled task, exactly as the DoD v1.0 writes it."""

    dod: str = DOD_VERSION
    task_id: str
    owner: str | None = None
    outcome: str | None = None
    target: str | None = None
    claimed_status: str
    report: str | None = None
    exit_code: int | None = None
    proof: list[ProofItem] = Field(default_factory=list)
    approval: Approval | None = None
    business_outcome: BusinessOutcome | None = None
    cost: Cost | None = None
    verdict: str | None = None
    verdict_by: str | None = None
    settled_at: datetime | None = None
    landed: LandedExtension | None = None

    @property
    def done(self) -> bool:
        """True only when the task settled verified or reconciled: its outcome was read back
        and holds. Any other verdict, and a receipt not settled yet, is not done."""
        return plain.is_done(self)

    @property
    def why(self) -> str:
        """One sentence of why the task is done or not done (what the read-back found)."""
        return plain.why(self)


def attempt_of(receipt: Receipt) -> int:
    """The act attempt a receipt settles (``landed.attempt``; 1 for a receipt without it)."""
    return receipt.landed.attempt if receipt.landed is not None else 1


def run_id_of(receipt: Receipt) -> str:
    """The workflow run that graded the receipt (``landed.run_id``), or "" when it names none."""
    value = getattr(receipt.landed, "run_id", None) if receipt.landed is not None else None
    return value if isinstance(value, str) else ""
