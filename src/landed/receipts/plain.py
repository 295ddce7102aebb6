"""A receipt's verdict in plain words: done or not, and one sentence of why (pure code).

``Receipt.done`` and ``Receipt.why`` read these. Done is the runner's word only: a settled
receipt whose verdict is ``verified`` or ``reconciled``. Anything else (planned, executed,
held, blocked, failed, reversed, a receipt not settled yet) is not done, whatever the agent
claimed. The sentence names what the read-back found, so a person need not know the rungs.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any, Protocol

from landed.receipts.ladder import READ_BACK_KINDS

__all__ = ["DONE_VERDICTS", "STOPPED_VERDICTS", "is_done", "why"]


class ProofItem(Protocol):
    """What these words read of a proof item (``landed.receipts.model.ProofItem``)."""

    kind: str
    ref: str | None
    expect: Any
    result: str | None
    landed: dict[str, Any] | None


class Receipt(Protocol):
    """What these words read of a receipt (``landed.receipts.model.Receipt``, which imports
    this module; a Protocol keeps the two free of an import circle)."""

    @property
    def proof(self) -> Sequence[ProofItem]: ...

    verdict: str | None
    settled_at: datetime | None
    landed: Any


#: The verdicts that mean done: the outcome was read back and holds.
DONE_VERDICTS = frozenset({"verified", "reconciled"})
#: Verdicts of a task a gate or a person stopped: their first finding says why, ahead of a
#: read-back that did not pass.
STOPPED_VERDICTS = frozenset({"blocked", "held", "superseded"})


def is_done(receipt: Receipt) -> bool:
    """True only for a settled receipt whose verdict is verified or reconciled."""
    return receipt.settled_at is not None and receipt.verdict in DONE_VERDICTS


def why(receipt: Receipt) -> str:
    """One sentence saying why the receipt is done or not done."""
    if receipt.settled_at is None:
        if not receipt.verdict:
            return "the task has not settled yet and has no verdict so far."
        return f"the task has not settled yet (verdict so far: {receipt.verdict})."
    reads = [p for p in receipt.proof if p.kind in READ_BACK_KINDS]
    if is_done(receipt):
        return _done_sentence(reads)
    finding = _first_finding(receipt)
    failed = next((p for p in reads if p.result != "pass"), None)
    if failed is not None and (finding is None or receipt.verdict not in STOPPED_VERDICTS):
        return _failed_sentence(failed)
    if finding:
        return f"not done ({receipt.verdict}): {finding.rstrip('.')}."
    if not reads:
        return f"not done ({receipt.verdict}): nothing was read back, so nothing shows it landed."
    return f"not done: the runner settled it {receipt.verdict}."


def _done_sentence(reads: list[ProofItem]) -> str:
    found = "; ".join(_found(p) for p in reads)
    return f"the read-back found what the plan expects: {found}."


def _failed_sentence(proof: ProofItem) -> str:
    action = _landed(proof).get("action")
    what = f" of {action!r}" if action else ""
    observation = _observation(proof)
    if proof.result == "probe-error":
        message = str(observation.get("message") or "no reading").rstrip(".")
        return f"the read-back{what} observed nothing ({message})."
    value = observation.get("value")
    seen = "nothing" if value is None else repr(value)
    return f"the read-back{what} found {seen} where {proof.expect} was expected ({proof.result})."


def _found(proof: ProofItem) -> str:
    action = _landed(proof).get("action") or proof.ref or proof.kind
    value = _observation(proof).get("value")
    if value is None:  # a reading judged by what it holds (contains, regex) carries no value
        return f"{action!r} matched ({proof.expect})"
    return f"{action!r} read {value!r} ({proof.expect})"


def _first_finding(receipt: Receipt) -> str | None:
    findings = getattr(receipt.landed, "findings", None) if receipt.landed else None
    if isinstance(findings, list) and findings and isinstance(findings[0], str):
        return findings[0]
    return None


def _landed(proof: ProofItem) -> dict[str, Any]:
    return proof.landed if isinstance(proof.landed, dict) else {}


def _observation(proof: ProofItem) -> dict[str, Any]:
    observation = _landed(proof).get("observation")
    return observation if isinstance(observation, dict) else {}
