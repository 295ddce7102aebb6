"""The findings about one receipt's proof and claims that grading adds beside its level.

Each function here states one rule's finding (or what it found wrong); ``evaluate`` in
``landed.receipts.grading`` decides when it applies.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import lru_cache
from typing import Any

from landed.receipts.ladder import ARTIFACT_KINDS, READ_BACK_KINDS
from landed.receipts.views import OutcomeView, ReceiptView
from landed.receipts.words import clip as _clip

__all__ = [
    "BUSINESS_READ_KINDS",
    "KNOWN_KINDS",
    "check_revenue",
    "is_weak_label",
    "live_failed",
    "missing_steps",
    "self_checked",
    "self_verdict",
    "signature_holds",
    "signed_revenue",
    "unsigned_outcome",
]

KNOWN_KINDS = READ_BACK_KINDS | ARTIFACT_KINDS

#: The read-back kinds that observe a business outcome itself (money taken, a message sent, a
#: call made, an object created at a provider). Under signature checks, P4 needs a signed one of
#: these whose kind the business_outcome class names: a page or a row that matched is a read-back
#: (P3), not a reconciliation, and business_outcome.verified is not signed.
BUSINESS_READ_KINDS = frozenset({"payment", "sent_log", "call_log", "provider_object"})


def _kind_name(text: object) -> str:
    return text.strip().lower().replace("-", "_").replace(" ", "_") if isinstance(text, str) else ""


def unsigned_outcome(view: ReceiptView, business: OutcomeView, counted: list[int]) -> str | None:
    """None when a signed read-back of the business outcome's own kind counted, else why not."""
    named = getattr(business, "class_", None)
    wanted = _kind_name(named)
    if wanted in BUSINESS_READ_KINDS:
        proof = view.proof
        if any(_kind_name(proof[index].kind) == wanted for index in counted):
            return None
        why = f"no signed {wanted} read-back counted"
    else:
        kinds = ", ".join(sorted(BUSINESS_READ_KINDS))
        why = f"its class {_clip(str(named))!r} is not a kind landed reads back and signs ({kinds})"
    return (
        f"business_outcome.verified is not signed and {why}; under signature checks P4 needs a "
        "signed read-back of the business outcome, so the proof counts as P3 (read-back)"
    )


def signed_revenue(view: ReceiptView, signed: Callable[[int], bool]) -> float | None:
    """``landed.revenue_usd`` when a signed, passing payment read-back observed that very amount
    (its signed observation's value), else None: under signature checks revenue the receipt merely
    states is not counted."""
    extension = getattr(view, "landed", None)
    revenue = getattr(extension, "revenue_usd", None)
    if not isinstance(revenue, int | float) or isinstance(revenue, bool):
        return None
    for index, item in enumerate(view.proof):
        if _kind_name(item.kind) != "payment" or _kind_name(item.result) != "pass":
            continue
        observation = (item.landed or {}).get("observation")
        value = observation.get("value") if isinstance(observation, dict) else None
        if (
            isinstance(value, int | float)
            and not isinstance(value, bool)
            and value == revenue
            and signature_holds(signed, index)
        ):
            return float(revenue)
    return None


def check_revenue(
    view: ReceiptView, signed: Callable[[int], bool], findings: list[tuple[str, str]]
) -> None:
    revenue = getattr(getattr(view, "landed", None), "revenue_usd", None)
    if revenue is not None and signed_revenue(view, signed) is None:
        findings.append(
            (
                "DOD-2",
                f"landed.revenue_usd {_clip(str(revenue), 40)} is not signed and no signed payment "
                "read-back observed that amount; under signature checks it does not count",
            )
        )


@lru_cache(maxsize=1024)
def is_weak_label(expect: str) -> bool:
    """An expect that names the weak default ("non_empty (weak default)"), not a text to find.
    Memoised: expectations repeat across receipts (one per plan step), and grading reads each."""
    name = _kind_name(expect)
    return name.startswith(("non_empty", "nonempty")) or "weak_default" in name


def self_verdict(verdict: str, issuer: str | None, by_owner: bool) -> str:
    who = "the owner" if by_owner else "the actor"
    return (
        f"verdict '{_clip(verdict)}' was issued by '{_clip(issuer or '')}' ({who}); the actor "
        "can't grade itself, so the verdict is void and landed grades the proof instead"
    )


def self_checked(number: int, kind: str, checked_by: str | None, checker: str) -> str:
    who = f"'{_clip(checked_by or '')}'" if checker else "nobody"
    return (
        f"read-back #{number} ({kind}) was checked by {who}, not by someone other than the "
        "actor and the owner; it counts as an assertion"
    )


def live_failed(
    landed: dict[str, Any], number: int, kind: str, findings: list[tuple[str, str]]
) -> bool:
    """A live re-read recorded on the proof that failed (or could not run) downgrades it; a live
    pass adds nothing."""
    live = landed.get("live")
    if not isinstance(live, dict) or live.get("ok") is True:
        return False
    if live.get("ok") is None and live.get("skipped") is True:
        # --live could not re-read it (its ref is no URL): the proof stands, with a note.
        reason = _clip(str(live.get("reason") or "no reason recorded"), 160)
        findings.append(("DOD-5", f"proof #{number} ({kind}) was not re-read live: {reason}"))
        return False
    rule = "DOD-4" if live.get("rule") == "DOD-4" else "DOD-5"
    reason = _clip(str(live.get("reason") or "no reason recorded"), 160)
    findings.append((rule, f"proof #{number} ({kind}) re-read live: {reason}; it no longer counts"))
    return True


def missing_steps(
    proof: Sequence[Any], counted: list[int], signed: Callable[[int], bool]
) -> str | None:
    """Why the signed readings do not cover the task's whole plan, or None when they do (or
    name no plan: readings signed before steps were).

    Each reading signs its plan step and the plan's length; one step's reading taken out of a
    receipt (the failing one) would otherwise leave the passing ones proving the task. Every
    reading with a valid signature counts as present, whatever its kind (a commit or a file
    step is an artifact, a command step an assertion); one of a kind no other rule grades (a
    command's output) that did not pass lowers the grade here."""
    declared: int | None = None
    seen: set[int] = set()
    failed: list[str] = []
    counts = set(counted)
    for index, item in enumerate(proof):
        landed = item.landed or {}
        steps, step = landed.get("steps"), landed.get("step")
        if not isinstance(steps, int) or not isinstance(step, int):
            continue
        if index not in counts:
            if not signature_holds(signed, index):
                continue
            result = str(item.result or "").strip().lower()
            kind = str(item.kind or "").strip().lower()
            if result != "pass" and kind not in KNOWN_KINDS:
                # A read-back or artifact that failed has lowered the grade already; a step
                # of another kind (a command's output) is part of the outcome all the same.
                failed.append(f"{step + 1} ({_clip(kind, 40)}: {_clip(result, 40) or 'no result'})")
        if declared is not None and steps != declared:
            return (
                f"the signed read-backs are of plans of {declared} and {steps} steps: they are "
                "not one task's read-backs, so they prove no more than an artifact"
            )
        declared = steps
        seen.add(step)
    if declared is None:
        return None
    if failed:
        return (
            f"plan step {', '.join(failed)} did not read back as a pass: the read-backs here "
            "prove only part of the outcome; it counts as an artifact"
        )
    gone = [str(step + 1) for step in range(declared) if step not in seen]
    if not gone:
        return None
    return (
        f"the plan has {declared} steps and no verified signed read-back shows step "
        f"{', '.join(gone)}: the read-backs here prove only part of the outcome; it counts as an "
        "artifact"
    )


def signature_holds(signed: Callable[[int], bool], index: int) -> bool:
    # A checker that raises has not shown the signature holds: fail closed.
    try:
        return signed(index) is True
    except Exception:
        return False
