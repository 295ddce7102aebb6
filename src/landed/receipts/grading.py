"""Pure grading of one receipt against the Definition of Done: proof level, bar and findings.

The rest of the grading code sits beside it in the receipts package: the word tables and word
rules in ``landed.receipts.words``, what a status or verdict claims in ``landed.receipts.claims``,
the findings each rule states in ``landed.receipts.findings``, what grading reads in
``landed.receipts.views``. Their public names stay importable from here.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

from pydantic import BaseModel, ConfigDict, Field

from landed.receipts.claims import (
    ACTOR_NAMES,
    Claim,
    claim_bar,
    status_facts,
    verdict_claims,
)
from landed.receipts.findings import (
    BUSINESS_READ_KINDS,
    KNOWN_KINDS,
    check_revenue,
    is_weak_label,
    live_failed,
    missing_steps,
    self_checked,
    signature_holds,
    signed_revenue,
    unsigned_outcome,
)
from landed.receipts.ladder import (
    ARTIFACT_KINDS,
    READ_BACK_KINDS,
    ProofLevel,
    Status,
)
from landed.receipts.model import ProofItem, Receipt
from landed.receipts.views import ProofView, ReceiptView
from landed.receipts.words import (
    DONE_CLAIM_WORDS,
    MEMO_TEXT,
    NOT_DONE_PHRASES,
    NOT_DONE_WORDS,
    POSITIVE_IDIOMS,
    SCAFFOLD_PHRASES,
    SCAFFOLD_WORDS,
    clip,
    is_loopback,
    outcome_families,
    read_report,
    report_facts,
    scaffold_signal,
    words,
)

__all__ = [
    "BUSINESS_READ_KINDS",
    "DONE_CLAIM_WORDS",
    "NOT_DONE_PHRASES",
    "NOT_DONE_WORDS",
    "POSITIVE_IDIOMS",
    "SCAFFOLD_PHRASES",
    "SCAFFOLD_WORDS",
    "Finding",
    "Grade",
    "ProofView",
    "RawGrade",
    "ReceiptView",
    "claim_bar",
    "evaluate",
    "grade",
    "is_weak_label",
    "signed_revenue",
    "unapproved",
    "words",
]

# This module runs inside the Temporal workflow sandbox: no I/O, no clock, no randomness. Its only
# state is constant tables and bounded memos (lru_cache) of pure functions of one string.


class Finding(BaseModel):
    """One reason behind a grade, under the id of the rule it applies (DOD-2, DOD-6, ...)."""

    model_config = ConfigDict(frozen=True)

    rule: str
    message: str


class Grade(BaseModel):
    """The verdict on one receipt, issued by landed rather than by the agent that wrote it."""

    model_config = ConfigDict(frozen=True)

    proof_level: ProofLevel = Field(description="The strongest proof the receipt carries (P0-P4).")
    required_level: ProofLevel | None = Field(
        default=None, description="What the done claim needs (P3, P4 for reconciled); None if none."
    )
    claims_done: bool = Field(description="The status or the verdict says done in some form.")
    meets_bar: bool = Field(description="No done claim, or a done claim that its proof carries.")
    proven_status: Status = Field(description="The highest rung honestly provable (DOD-6).")
    findings: list[Finding] = Field(default_factory=list)


class RawGrade(NamedTuple):
    """The grade as plain values: what ``evaluate`` returns and ``Grade`` wraps. The checker
    streams millions of these, where building a pydantic model per receipt would dominate."""

    proof_level: ProofLevel
    required_level: ProofLevel | None
    claims_done: bool
    meets_bar: bool
    proven_status: Status
    findings: tuple[tuple[str, str], ...]
    #: A done claim proven at P3 or above with nothing saying it is not done: what the proof
    #: rate counts ("done at P3 or above"), a reconciled claim read back at P3 included.
    done_at_p3: bool = False

    def to_grade(self) -> Grade:
        return Grade(
            proof_level=self.proof_level,
            required_level=self.required_level,
            claims_done=self.claims_done,
            meets_bar=self.meets_bar,
            proven_status=self.proven_status,
            findings=[Finding(rule=rule, message=message) for rule, message in self.findings],
        )


# --- grading -----------------------------------------------------------------------------------


def grade(
    receipt: Receipt, *, signature_ok: Callable[[Receipt, ProofItem], bool] | None = None
) -> Grade:
    """Grade one receipt. With ``signature_ok``, a read-back whose signature it rejects (or that
    makes it raise) counts as an assertion, since nothing then shows who observed it."""
    if signature_ok is None:
        return evaluate(receipt).to_grade()
    check = signature_ok

    def signed(index: int) -> bool:
        return check(receipt, receipt.proof[index])

    return evaluate(receipt, signed).to_grade()


# Levels are plain ints inside the hot path (enum operations cost more than the rules); the
# tables below turn them back into ProofLevel and Status at the edges.
_LEVELS = tuple(ProofLevel)
_RUNG_OF_LEVEL = (Status.PLANNED, Status.PLANNED, Status.BUILT, Status.VERIFIED, Status.RECONCILED)
_EXECUTED_RANK = Status.EXECUTED.rank
_RANKS = {s: s.rank for s in Status}
_VALUES = {s: s.value for s in Status}
_NAMES = (
    "P0 (a status only)",
    "P1 (asserted)",
    "P2 (artifact)",
    "P3 (read-back)",
    "P4 (reconciled)",
)
_NO_FINDINGS: tuple[tuple[str, str], ...] = ()
Findings = list[tuple[str, str]]


def evaluate(view: ReceiptView, signed: Callable[[int], bool] | None = None) -> RawGrade:
    """Grade anything shaped like a receipt; ``signed(i)`` says whether proof ``i``'s signature
    verifies. This is the only grading logic: ``grade`` and ``landed check`` both call it.

    The steps: the claims, the proof's level, the word rules (DOD-8, DOD-7), the honest status
    (DOD-6) and the bar. It runs once per receipt on files of millions, so it is written for
    CPython's speed: few calls on the usual path (a call costs as much as a rule), plain ints for
    levels, memos of what repeats, and the word rules behind set operations that run in C."""
    findings: Findings = []
    owner = view.owner
    owner = owner.strip().lower() if owner else ""
    status = status_facts(view.claimed_status)
    verdict = view.verdict
    if verdict:
        claim, said = verdict_claims(view.claimed_status, verdict, view.verdict_by, owner)
        findings.extend(said)
    else:
        claim = status.claim
    # With signatures checked, the read-backs that counted through a signature (their indexes):
    # only those can carry what unsigned fields claim (P4, revenue).
    counted: list[int] | None = None if signed is None else []
    claims_done = claim.bar >= 0
    level = _proof_level(view, owner, claims_done, signed, counted, findings)
    # What a report says is read once per distinct report (reports repeat: agents write them
    # from templates), up to a length that keeps the memo's memory bounded.
    report = view.report
    if not report:
        not_done = found = None
    elif len(report) <= MEMO_TEXT:
        not_done, found = report_facts(report)
    else:
        not_done, found = read_report(report)
    target = view.target
    if target or found is not None:
        scaffold = scaffold_signal(target, found, view.outcome)
        if scaffold is not None:
            level = _scaffold_capped(scaffold, level, claims_done, findings)
    # DOD-7: the report's (and the status's own) words beat the status.
    said_by = "the report says"
    if not_done is None:
        not_done, said_by = status.not_done, "the status itself says"
    # The agent's own side-state word is never upgraded, then the verifier's; else the proof's
    # rung, capped by the words and by a rung the verifier held the task to.
    proven = status.side or claim.side
    if proven is None:
        proven = _RUNG_OF_LEVEL[level]
        if not_done is not None and _RANKS[proven] > _EXECUTED_RANK:
            proven = Status.EXECUTED
        if claim.rung is not None and _RANKS[claim.rung] < _RANKS[proven]:
            proven = claim.rung
    if not_done is not None and (claims_done or _RUNG_OF_LEVEL[level] is not proven):
        why = "the agent's own words beat its status, so the task is not done"
        findings.append(("DOD-7", f"{said_by} '{not_done}': {why}"))
    meets_bar = True
    if claims_done:
        if level < claim.bar or not_done is not None or claim.overruled is not None:
            meets_bar = False
            if level < claim.bar or claim.overruled is not None:
                _bar_not_met(view, claim, level, proven, findings)
    elif status.rung is not None and _RANKS[status.rung] > _RANKS[proven]:
        findings.append(("DOD-6", _rung_above(status.rung, level, proven)))
    # tuple.__new__ skips NamedTuple's Python-level constructor: this runs per receipt.
    return tuple.__new__(
        RawGrade,
        (
            _LEVELS[level],
            None if claim.bar < 0 else _LEVELS[claim.bar],
            claims_done,
            meets_bar,
            proven,
            tuple(findings) if findings else _NO_FINDINGS,
            claims_done and level >= 3 and not_done is None and claim.overruled is None,
        ),
    )


def unapproved(graded: RawGrade, why: str) -> RawGrade:
    """GOV-5 under signature checks: a receipt that claims an approval no trusted approver key
    signed proves at most an artifact, as a read-back without a valid signature does: the act
    ran, but nothing shows a person allowed it. ``why`` is the finding."""
    level = min(_LEVELS.index(graded.proof_level), 2)
    required = graded.required_level
    return graded._replace(
        proof_level=_LEVELS[level],
        meets_bar=graded.meets_bar and (required is None or _LEVELS.index(required) <= level),
        proven_status=Status.BUILT if graded.proven_status.is_done else graded.proven_status,
        findings=(*graded.findings, ("GOV-5", why)),
        done_at_p3=graded.done_at_p3 and level >= 3,
    )


def _proof_level(
    view: ReceiptView,
    owner: str,
    claims_done: bool,
    signed: Callable[[int], bool] | None,
    counted: list[int] | None,
    findings: Findings,
) -> int:
    """The proof's level: P1 once the agent describes anything, then the best proof item, held
    down by read-backs that disagree, proof that did not resolve, and unsigned claims."""
    report = view.report
    level = 1 if (report and not report.isspace()) else 0
    # Read-backs that were made and did not pass: one passing read cannot outvote them.
    disagreed: list[int] = []
    # Artifacts that were checked and did not resolve (DOD-5: a missing one downgrades).
    unresolved: list[int] = []
    for number, item in enumerate(view.proof, 1):
        if level < 1:
            level = 1
        kind = item.kind
        if kind not in KNOWN_KINDS:
            kind = kind.strip().lower()
        result = item.result
        passed = result == "pass" or (result is not None and result.strip().lower() == "pass")
        landed = item.landed
        # Its own finding says why (gone, changed): "did not pass" would contradict its result.
        gone = landed is not None and live_failed(landed, number, kind, findings)
        if gone:
            passed = False
        if kind in READ_BACK_KINDS:
            if not passed:
                if _read_back_failed(number, kind, result, gone, landed, findings):
                    disagreed.append(number)
                continue
            # The usual read-back counts: its rules are checked here first, since a call per
            # read-back costs on millions of receipts; any other takes them all, for its finding.
            ref, checker, expect = item.ref, item.checked_by, item.expect
            checker = checker.strip().lower() if checker else ""
            # DOD-4: a page check must name a text to find, not the weak non_empty default.
            weak = kind == "http_contains" and not (
                isinstance(expect, str) and expect.strip() and not is_weak_label(expect)
            )
            usual = signed is None and checker and checker not in ACTOR_NAMES and checker != owner
            if usual and ref and not ref.isspace() and not weak and not is_loopback(ref):
                level = 3
                continue
            proves = _passed_read_back(view, item, number, kind, weak, owner, signed, findings)
            if proves == 3:
                level = 3
                if counted is not None:
                    counted.append(number - 1)
            elif proves == 2 and level < 2:
                level = 2
        elif kind in ARTIFACT_KINDS:
            ref = item.ref
            if not passed:
                why = f"did not pass (result={clip(str(result))!r}); it proves nothing"
                findings.append(("DOD-5", f"artifact #{number} ({kind}) {why}"))
                if result is not None:  # checked, and it did not resolve
                    unresolved.append(number)
            elif not ref or ref.isspace():
                why = "cites no ref; cited proof must resolve, so it counts as an assertion"
                findings.append(("DOD-5", f"artifact #{number} ({kind}) {why}"))
            elif level < 2:
                level = 2
        elif claims_done:
            why = "is neither a read-back kind nor an artifact kind; it counts as an assertion"
            findings.append(("DOD-4", f"proof #{number} kind '{clip(kind, 40)}' {why}"))
    if (
        disagreed
        or unresolved
        or signed is not None
        or (level == 3 and view.business_outcome is not None)
    ):
        return _held_level(view, level, disagreed, unresolved, signed, counted, findings)
    return level  # nothing below can change it: the common case, without the call


def _read_back_failed(
    number: int, kind: str, result: str | None, gone: bool, landed: Any, findings: Findings
) -> bool:
    """A read-back that did not pass proves nothing (DOD-5; one that failed a live re-read has
    said why already). True when it was made and disagrees, or no longer holds live: one
    passing read cannot outvote it. One with no result was never made: unchecked, it proves
    nothing, and it is not known to be missing either."""
    if not gone:
        why = f"did not pass (result={clip(str(result))!r}); it proves nothing"
        findings.append(("DOD-5", f"read-back #{number} ({kind}) {why}"))
    return result is not None or bool(landed)


def _passed_read_back(
    view: ReceiptView,
    item: ProofView,
    number: int,
    kind: str,
    weak: bool,
    owner: str,
    signed: Callable[[int], bool] | None,
    findings: Findings,
) -> int:
    """The level a read-back that passed proves: 3 when it counts, 2 when it read a loopback
    address (an artifact), 0 when it counts as an assertion; each short of 3 says why."""
    ref = item.ref
    checker = item.checked_by
    checker = checker.strip().lower() if checker else ""
    if not ref or ref.isspace():
        why = "cites no ref; cited proof must resolve, so it counts as an assertion"
        findings.append(("DOD-5", f"read-back #{number} ({kind}) {why}"))
    elif not checker or checker in ACTOR_NAMES or checker == owner:
        findings.append(("DOD-2", self_checked(number, kind, item.checked_by, checker)))
    elif weak:
        why = (
            "has no expect text (the weak non_empty default is none), so it shows only that the "
            "page answered; it counts as an assertion"
        )
        findings.append(("DOD-4", f"read-back #{number} ({kind}) {why}"))
    elif is_loopback(ref) and "local" not in outcome_families(view.outcome):
        why = (
            f"reads {clip(ref.strip())}, a loopback address: a local server is not the live "
            "outcome unless the outcome names it; it counts as an artifact"
        )
        findings.append(("DOD-8", f"read-back #{number} ({kind}) {why}"))
        return 2
    elif signed is not None and not signature_holds(signed, number - 1):
        why = (
            "carries no signature that verifies against the trusted key, so nothing shows the "
            "verifier rather than the actor observed it; it counts as an assertion"
        )
        findings.append(("DOD-2", f"read-back #{number} ({kind}) {why}"))
    else:
        return 3
    return 0


def _held_level(
    view: ReceiptView,
    level: int,
    disagreed: list[int],
    unresolved: list[int],
    signed: Callable[[int], bool] | None,
    counted: list[int] | None,
    findings: Findings,
) -> int:
    """The level once every declared read-back, every cited artifact and (under signature
    checks) every signed step and unsigned field is held against it."""
    if disagreed and level >= 3:
        # Every declared read-back has to hold: a task whose plan read 45 rows as 90 is not
        # done because its page check passed. The passing read shows part of the outcome.
        numbers = ", ".join(f"#{n}" for n in disagreed)
        why = (
            "disagreed with the claim, so the passing read-backs prove only part of the "
            "outcome; it counts as an artifact"
        )
        findings.append(("DOD-4", f"read-back {numbers} {why}"))
        level = 2
    if unresolved and level >= 2:
        numbers = ", ".join(f"#{n}" for n in unresolved)
        level -= 1
        findings.append(
            (
                "DOD-5",
                f"cited proof {numbers} did not resolve, and a missing one downgrades the claim: "
                f"the proof counts as {_NAMES[level]}",
            )
        )
    if counted and signed is not None and level >= 3:
        # Last, and only while a read-back still proves the task: it verifies signatures.
        missing = missing_steps(view.proof, counted, signed)
        if missing:
            findings.append(("DOD-5", missing))
            level = 2
    business = view.business_outcome
    if level == 3 and business is not None and business.verified is True:
        if counted is None:
            level = 4
        else:
            # business_outcome is not signed: under signature checks, P4 needs a signed
            # read-back of the business outcome itself.
            unsigned = unsigned_outcome(view, business, counted)
            if unsigned is None:
                level = 4
            else:
                findings.append(("DOD-2", unsigned))
    if counted is not None and signed is not None:
        check_revenue(view, signed, findings)
    return level


def _scaffold_capped(scaffold: str, level: int, claims_done: bool, findings: Findings) -> int:
    """A scaffold named by the target or the report caps the proof at an artifact (DOD-8)."""
    capped = 2 if level > 2 else level
    if claims_done or capped != level:
        why = (
            "is a scaffold, not the live outcome, and the outcome does not name it as the "
            f"deliverable; the proof counts at most as {_NAMES[capped]}"
        )
        findings.append(("DOD-8", f"{scaffold} {why}"))
    return capped


def _rung_above(rung: Status, level: int, proven: Status) -> str:
    """The DOD-6 finding of a rung claimed above what the proof shows."""
    return (
        f"claimed_status '{_VALUES[rung]}' is above what the proof shows ({_NAMES[level]}); the "
        f"highest honest status is '{_VALUES[proven]}'"
    )


def _bar_not_met(
    view: ReceiptView, claim: Claim, level: int, proven: Status, findings: Findings
) -> None:
    """Why a done claim is not carried: its proof is below its bar (DOD-6; an exit code proves
    nothing, DOD-3), or an independent verdict says it is not done (DOD-2)."""
    if level < claim.bar:
        findings.append(
            (
                "DOD-6",
                f"{claim.source} '{clip(claim.word)}' needs {_NAMES[claim.bar]}; the proof "
                f"reaches only {_NAMES[level]}, so the highest honest status is "
                f"'{_VALUES[proven]}'",
            )
        )
        if view.exit_code is not None:
            findings.append(
                (
                    "DOD-3",
                    f"exit code {view.exit_code} says the process stopped, not that the work "
                    "landed; it proves nothing",
                )
            )
    if claim.overruled is not None:
        findings.append(("DOD-2", claim.overruled))
