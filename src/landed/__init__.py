"""landed: an agent's "done" becomes a verdict only after the result is read back."""

from __future__ import annotations

from landed._ladder import (
    ARTIFACT_KINDS,
    CALL_LADDER,
    DONE_WORDS,
    MESSAGE_LADDER,
    READ_BACK_KINDS,
    CallRung,
    MessageRung,
    ProofLevel,
    Status,
    required_level,
)
from landed._receipt import (
    Approval,
    BusinessOutcome,
    Cost,
    LandedExtension,
    ProofItem,
    Receipt,
    SignedObservation,
)

__all__ = [
    "ARTIFACT_KINDS",
    "CALL_LADDER",
    "DONE_WORDS",
    "MESSAGE_LADDER",
    "READ_BACK_KINDS",
    "Approval",
    "BusinessOutcome",
    "CallRung",
    "Cost",
    "LandedExtension",
    "MessageRung",
    "ProofItem",
    "ProofLevel",
    "Receipt",
    "SignedObservation",
    "Status",
    "required_level",
]

__version__ = "0.1.0"
