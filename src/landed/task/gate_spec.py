"""What a task declares for landed's governance gates: an irreversible act (GOV-5), the person
it contacts (GOV-6), and how long a person has to decide.

They are part of the submitted spec, so they belong to the wire contract: only data and bounds
here; the decisions live in ``landed.governance.gates`` and ``landed.governance.consent``.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "DEFAULT_APPROVAL_TIMEOUT",
    "IRREVERSIBLE_KINDS",
    "Contacts",
    "IrreversibleKind",
    "approval_timeout_problem",
]

#: GOV-5: what cannot be undone, and so waits for a person's approval before the act runs.
IrreversibleKind = Literal["send", "publish", "spend", "provision", "migrate"]
IRREVERSIBLE_KINDS: tuple[str, ...] = ("send", "publish", "spend", "provision", "migrate")

#: How long an approval gate waits for a person when the task names no other: one working day.
#: Past it the task settles ``held`` (zero deliveries), never ``failed``.
DEFAULT_APPROVAL_TIMEOUT = timedelta(hours=24)
_LONGEST_WAIT = timedelta(days=30)


class Contacts(BaseModel):
    """GOV-6: the person the act reaches, checked for consent and do-not-contact before it runs.

    The check reads the verifier's source ``consent_source`` (a SQL database holding the tables
    ``do_not_contact`` and ``contact_consent``; docs/governance.md), under the verifier's identity.
    """

    model_config = ConfigDict(extra="forbid")

    kind: Literal["message", "call"] = Field(description="How the act reaches the person.")
    recipient: str = Field(min_length=1, max_length=320, description="Address or number reached.")
    consent_source: str = Field(
        min_length=1,
        max_length=200,
        pattern=r"^[A-Za-z0-9_.:-]+$",
        description="Name of the verifier's source that holds consent and do-not-contact.",
    )
    cleared_by: str | None = Field(
        default=None,
        max_length=200,
        description="Who can clear a refusal (named on the blocked receipt); default: the keeper "
        "of the consent source.",
    )
    timeout_s: float = Field(
        default=10.0, gt=0, le=600, description="How long the check may take; past it, blocked."
    )


def approval_timeout_problem(value: timedelta) -> str | None:
    """Why an approval timeout is refused (None: it is within bounds)."""
    if timedelta(seconds=1) <= value <= _LONGEST_WAIT:
        return None
    return (
        "approval_timeout must be between 1 second and 30 days; give seconds or an ISO 8601 "
        "duration such as PT24H"
    )
