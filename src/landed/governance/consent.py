"""Consent and do-not-contact before contact (GOV-6): plain functions of data.

The consent check is one read of the verifier's named source: a SQL database holding

- ``do_not_contact(recipient TEXT, channel TEXT)``: a row for the recipient on the act's
  channel (``message``/``call``) or on ``*`` forbids contact;
- ``contact_consent(recipient TEXT, channel TEXT)``: a row for the recipient on the channel
  (or ``*``) is the consent the contact rests on.

A pass needs no do-not-contact row and a consent row. Anything else, including a read that
could not be made, is a refusal: the task settles ``blocked`` and its act never runs.
"""

from __future__ import annotations

from typing import Any

from landed.probes.contract import RecordProbe
from landed.receipts.model import Receipt
from landed.task.gate_messages import ConsentOutput
from landed.task.gate_spec import Contacts
from landed.task.messages import ActReport

__all__ = [
    "CONSENT_QUERY",
    "blocked_report",
    "consent_probe",
    "judge_consent",
    "unreadable",
]

CONSENT_QUERY = (
    "select "
    "(select count(*) from do_not_contact where recipient = ? and channel in (?, '*')) "
    "as do_not_contact, "
    "(select count(*) from contact_consent where recipient = ? and channel in (?, '*')) "
    "as consent"
)


def consent_probe(contacts: Contacts, *, postgres: bool = False) -> RecordProbe:
    """The one read the check makes, on the verifier's consent source."""
    query = CONSENT_QUERY.replace("?", "%s") if postgres else CONSENT_QUERY
    who, channel = contacts.recipient, contacts.kind
    return RecordProbe(
        source=contacts.consent_source,
        query=query,
        params=[who, channel, who, channel],
        measure="rows",
        timeout_s=contacts.timeout_s,
    )


def _count(row: dict[str, Any], name: str) -> int | None:
    value = row.get(name)
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        return None
    try:
        return int(value)
    except ValueError:
        return None


def judge_consent(contacts: Contacts, rows: Any) -> str | None:
    """Why contact is refused (None: allowed), from the rows the consent read returned."""
    source, who, channel = contacts.consent_source, contacts.recipient, contacts.kind
    row = rows[0] if isinstance(rows, list) and len(rows) == 1 else None
    dnc = _count(row, "do_not_contact") if isinstance(row, dict) else None
    consent = _count(row, "consent") if isinstance(row, dict) else None
    if dnc is None or consent is None:
        return unreadable(contacts, f"its answer was not one row of two counts ({rows!r:.200})")
    if dnc > 0:
        return (
            f"{who} is on the do-not-contact list in consent source {source!r} for "
            f"{channel} (table do_not_contact)"
        )
    if consent == 0:
        return f"no consent from {who} for {channel} is recorded in consent source {source!r}"
    return None


def unreadable(contacts: Contacts, why: str) -> str:
    """The condition of a consent check that could not be read: it blocks, never passes."""
    return (
        f"the consent and do-not-contact check on source {contacts.consent_source!r} could not "
        f"be read: {why}"
    )


def blocked_report(contacts: Contacts, condition: str) -> ActReport:
    """The report of a task refused contact (DOD-9): the exact condition and who can clear it;
    nothing was sent."""
    clears = contacts.cleared_by or f"the keeper of consent source {contacts.consent_source!r}"
    return ActReport(
        claimed_status="blocked",
        report=f"blocked before contact: {condition}. Who can clear it: {clears}. "
        "Nothing was sent.",
    )


def with_consent(receipt: Receipt, out: ConsentOutput | None) -> Receipt:
    """The receipt with the consent check's answer (``landed.consent``): who read it and what
    it found, and, for a refusal, the refusal as its first finding. A pass is permission to
    proceed, never proof of delivery (GOV-6)."""
    landed = receipt.landed
    if out is None or landed is None:
        return receipt
    record = {"allowed": out.allowed, "checked_by": out.checked_by, "condition": out.condition}
    update: dict[str, Any] = {"consent": record}
    if not out.allowed:
        # The refusal first, where `receipt.why` and `submit --wait` show it: grading's own
        # finding on the report the gate wrote ("the report says 'blocked'") explains nothing.
        said = (receipt.report or f"blocked before contact: {out.condition}").rstrip(".")
        update["findings"] = [f"GOV-6: {said}", *getattr(landed, "findings", [])]
    return receipt.model_copy(update={"landed": landed.model_copy(update=update)})
