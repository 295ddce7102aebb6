"""Pure grading of one receipt against the Definition of Done: proof level, bar and findings."""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Sequence
from functools import lru_cache
from typing import Any, NamedTuple, Protocol

from pydantic import BaseModel, ConfigDict, Field

from landed.receipts.ladder import (
    ARTIFACT_KINDS,
    DONE_WORDS,
    READ_BACK_KINDS,
    ProofLevel,
    Status,
    fold_text,
    required_level,
)
from landed.receipts.model import ProofItem, Receipt

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


# --- the words -------------------------------------------------------------------------------
# Text is read as words: lowercased runs of ASCII letters. Anything else (digits, punctuation,
# apostrophes, "_", non-ASCII) splits words, so "couldn't" reads as "couldn t" and
# "pending_review" as "pending review". A word next to a digit or an accent still counts: the
# rules err towards flagging.

#: Claim words that say "done": the ladder's table (``landed.DONE_WORDS``), so that
#: ``landed.required_level`` and the grader read a claim the same way.
DONE_CLAIM_WORDS = DONE_WORDS

#: DOD-7: words and two-word phrases in a report that mean the work is not done. Deliberately
#: blind to negation: "no longer blocked" still counts. Parsing negation is where a checker starts
#: excusing overclaims ("not blocked, but the deploy is pending"); a false alarm costs one
#: re-worded report, a missed one costs a false "done". Digits are not words, so "Only 22 of 45"
#: reads "only of". The one exception is a short list of fixed positive idioms about errors and
#: failures ("no errors", "0 failed", "without failures", "error-free": POSITIVE_IDIOMS), which
#: are taken out of the text before the words are read: "done, no errors" is the commonest
#: clean report there is. Anything else naming an error or a failure counts ("errors: 2",
#: "no errors, but the insert failed" still says "failed").
NOT_DONE_WORDS = frozenset(
    {
        *("blocked", "blocker", "blockers", "blocking", "waiting", "awaiting", "pending"),
        *("incomplete", "unfinished", "partial", "partially", "cannot", "couldnt", "unable"),
        *("stuck", "todo", "wip", "halfway", "queued", "retrying", "skipped", "skipping"),
        *("failed", "failing", "fails", "failure", "failures", "error", "errors", "errored"),
        *("crashed", "aborted", "reverted", "rollback", "didnt", "hasnt", "havent"),
    }
)
NOT_DONE_PHRASES = frozenset(
    [("could", "not"), ("couldn", "t"), ("can", "not"), ("can", "t"), ("in", "progress")]
    + [("on", "hold"), ("timed", "out"), ("gave", "up"), ("failed", "to")]
    + [("not", w) for w in ("yet", "done", "finished", "complete", "completed", "working")]
    + [("not", "live"), ("not", "deployed"), ("not", "all")]
    + [("still", w) for w in ("need", "needs", "needed", "missing", "waiting", "pending")]
    + [("did", "not"), ("didn", "t"), ("have", "not"), ("haven", "t"), ("has", "not")]
    + [("hasn", "t"), ("rolled", "back"), ("only", "of"), ("backed", "out")]
)
#: Positive idioms about errors and failures, removed before DOD-7 reads a text (see above).
POSITIVE_IDIOMS = re.compile(
    r"\b(?:no|zero|0|without|never)[\s_-]+(?:errors?|failures?|failed|failing)\b"
    r"|\b(?:errors?|failures?)[\s_-]*(?:free|:\s*0|=\s*0)(?![0-9])"
    r"|\b0\s+(?:errors?|failures?|failed)\b",
    re.IGNORECASE,
)

#: DOD-8: words naming a scaffold rather than the live outcome, by family, so that an outcome
#: naming the family ("a clickable mockup") makes that scaffold the named deliverable.
SCAFFOLD_WORDS: dict[str, str] = {
    **dict.fromkeys(("mock", "mocks", "mocked", "mockup", "mockups"), "mock"),
    **dict.fromkeys(("stub", "stubs", "stubbed"), "stub"),
    **dict.fromkeys(("placeholder", "placeholders", "dummy"), "placeholder"),
    **dict.fromkeys(("localhost", "loopback"), "local"),
    **dict.fromkeys(("scaffold", "scaffolds", "scaffolded", "scaffolding"), "scaffold"),
}
SCAFFOLD_PHRASES: dict[tuple[str, str], str] = {
    ("lorem", "ipsum"): "placeholder",
    ("local", "build"): "local",
    ("dev", "server"): "local",
}
# Outcome words that mean the scaffold is being replaced, not delivered ("replace the mock").
_REPLACING = frozenset(
    {
        *("replace", "replaces", "replaced", "replacing", "remove", "removes", "removed"),
        *("removing", "swap", "swaps", "swapped", "swapping", "delete", "deletes", "deleted"),
        *("deleting", "drop", "drops", "dropped", "dropping", "instead", "rather", "no", "not"),
        "without",
    }
)
# A loopback host in a URL or a bare host:port: localhost, *.localhost, 127/8, 0.0.0.0, ::1.
_LOOPBACK = re.compile(
    r"(?<![a-z0-9.-])(?:localhost|[a-z0-9-]+(?:\.[a-z0-9-]+)*\.localhost|127(?:\.[0-9]{1,3}){3}"
    r"|0\.0\.0\.0|\[::1\]|::1)(?::[0-9]+)?(?![a-z0-9.-])"
)

_ACTOR_NAMES = frozenset({"actor", "agent", "self", "owner"})
_SIDE_STATES = {s.value: s for s in Status if s.is_side_state}
_LADDER_RUNGS = {s.value: s for s in Status if not s.is_side_state}

# Word tables as bytes: splitting UTF-8 bytes with a translate table is the fastest way to get
# words in CPython, and grading runs once per receipt on files of millions.
_WORD_BYTES = bytes(c if 97 <= c <= 122 else c + 32 if 65 <= c <= 90 else 32 for c in range(256))
_B_NOT_DONE = frozenset(w.encode() for w in NOT_DONE_WORDS)
_B_NOT_DONE_FIRST = frozenset(a.encode() for a, _ in NOT_DONE_PHRASES)
_B_NOT_DONE_PHRASES = frozenset((a.encode(), b.encode()) for a, b in NOT_DONE_PHRASES)
_B_SCAFFOLD = {w.encode(): f for w, f in SCAFFOLD_WORDS.items()}
_B_SCAFFOLD_SET = frozenset(_B_SCAFFOLD)
# In a target the address decides loopback ("localhost.example.com" is a live host).
_B_SCAFFOLD_IN_TARGET = _B_SCAFFOLD_SET - {b"localhost", b"loopback"}
_B_SCAFFOLD_FIRST = frozenset(a.encode() for a, _ in SCAFFOLD_PHRASES)
_B_SCAFFOLD_PHRASES = {(a.encode(), b.encode()): f for (a, b), f in SCAFFOLD_PHRASES.items()}
_B_SCAFFOLD_PAIRS = frozenset(_B_SCAFFOLD_PHRASES)
_B_REPLACING = frozenset(w.encode() for w in _REPLACING)
_B_LOCAL = frozenset({b"local", b"locally"})


def words(text: str | None) -> list[bytes]:
    """The words of a text, as the word rules read them (lowercase ASCII letters, bytes)."""
    if not text:
        return []
    return text.encode("utf-8", "replace").translate(_WORD_BYTES).split()


# --- what grading reads ------------------------------------------------------------------------
# Grading reads receipts through these protocols, so the pydantic Receipt and the checker's fast
# decoded form go through the same code: there is one grading logic, not a copy per input shape.


class ProofView(Protocol):
    @property
    def kind(self) -> str: ...
    @property
    def ref(self) -> str | None: ...
    @property
    def expect(self) -> Any: ...
    @property
    def checked_by(self) -> str | None: ...
    @property
    def result(self) -> str | None: ...
    @property
    def landed(self) -> dict[str, Any] | None: ...


class OutcomeView(Protocol):
    @property
    def verified(self) -> bool: ...


class ReceiptView(Protocol):
    @property
    def owner(self) -> str | None: ...
    @property
    def outcome(self) -> str | None: ...
    @property
    def target(self) -> str | None: ...
    @property
    def claimed_status(self) -> str: ...
    @property
    def report(self) -> str | None: ...
    @property
    def exit_code(self) -> int | None: ...
    @property
    def proof(self) -> Sequence[ProofView]: ...
    @property
    def business_outcome(self) -> OutcomeView | None: ...
    @property
    def verdict(self) -> str | None: ...
    @property
    def verdict_by(self) -> str | None: ...


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


@lru_cache(maxsize=512)
def claim_bar(word: str | None) -> ProofLevel | None:
    """The level a status or verdict word needs: P4 for reconciled, P3 for any other done word,
    None when it claims nothing done ("executed", "held", "not done"). It is
    ``landed.required_level``, memoised: there is one claim logic."""
    return required_level(word)


class _StatusFacts(NamedTuple):
    bar: int  # -1: claims nothing done
    side: Status | None  # the side state the word names (blocked, held, failed, superseded)
    rung: Status | None  # the ladder rung the word names
    not_done: str | None  # a DOD-7 phrase in the status itself ("done (partial)")


@lru_cache(maxsize=1024)
def _status_facts(word: str) -> _StatusFacts:
    # Status words come from a small vocabulary, so everything derived from one is computed once.
    bar = claim_bar(word)
    norm = word.strip().lower()
    return _StatusFacts(
        -1 if bar is None else int(bar),
        _SIDE_STATES.get(norm),
        _LADDER_RUNGS.get(norm),
        _first_not_done(word),
    )


def _clip(text: str, limit: int = 80) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "\u2026"


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
_KNOWN_KINDS = READ_BACK_KINDS | ARTIFACT_KINDS
_NO_FINDINGS: tuple[tuple[str, str], ...] = ()


def evaluate(view: ReceiptView, signed: Callable[[int], bool] | None = None) -> RawGrade:
    """Grade anything shaped like a receipt; ``signed(i)`` says whether proof ``i``'s signature
    verifies. This is the only grading logic: ``grade`` and ``landed check`` both call it.

    It runs once per receipt on files of millions, so it is written for CPython's speed: one
    function, plain ints for levels, and the word rules behind set operations that run in C."""
    findings: list[tuple[str, str]] = []
    # With signatures checked, the read-backs that counted through a signature (their indexes):
    # only those can carry what unsigned fields claim (P4, revenue).
    counted: list[int] | None = None if signed is None else []
    owner = view.owner
    owner = owner.strip().lower() if owner else ""
    # Read-backs that were made and did not pass: one passing read cannot outvote them.
    disagreed: list[int] = []
    # Artifacts that were checked and did not resolve (DOD-5: a missing one downgrades).
    unresolved: list[int] = []
    claimed = view.claimed_status
    status = _status_facts(claimed)

    # Claims: the status, and a verdict written into the receipt, each may say done.
    bar = status.bar
    claim_source, claim_word = "claimed_status", claimed
    verdict = view.verdict
    # An independent verifier's verdict that the task is not done: done is its word (DOD-2).
    overruled: str | None = None
    verdict_side: Status | None = None
    verdict_rung: Status | None = None
    if verdict:
        by = view.verdict_by
        by = by.strip().lower() if by else ""
        facts = status if verdict == claimed else _status_facts(verdict)
        verdict_bar = facts.bar
        if not by:
            why = "names no verdict_by; a verdict nobody can be shown to have issued is void"
            findings.append(("DOD-2", f"verdict '{_clip(verdict)}' {why}"))
        elif by in _ACTOR_NAMES or by == owner:
            findings.append(("DOD-2", _self_verdict(verdict, view.verdict_by, by == owner)))
        else:
            # held, blocked, failed, superseded as the verifier's word: the task's state; and
            # a rung (planned, executed) the verifier held it to caps the honest status.
            verdict_side, verdict_rung = facts.side, facts.rung
        if verdict_bar < 0 <= bar:
            # Void as a grade (it can raise nothing), a verdict of "not done" still stands:
            # whoever issued it, nothing is proven done against it.
            overruled = (
                f"the verdict '{_clip(verdict)}' by '{_clip(view.verdict_by or '')}' says "
                "the task is not done; done is a verdict, not the agent's claim"
            )
        if verdict_bar > bar:
            bar, claim_source, claim_word = verdict_bar, "verdict", verdict
    claims_done = bar >= 0

    # Proof level: P1 once the agent describes anything, then the best proof item.
    report = view.report
    level = 1 if (report and not report.isspace()) else 0
    outcome = view.outcome
    for number, item in enumerate(view.proof, 1):
        if level < 1:
            level = 1
        kind = item.kind
        if kind not in _KNOWN_KINDS:
            kind = kind.strip().lower()
        result = item.result
        passed = result == "pass" or (result is not None and result.strip().lower() == "pass")
        landed = item.landed
        # Its own finding says why (gone, changed): "did not pass" would contradict its result.
        live_failed = landed is not None and _live_failed(landed, number, kind, findings)
        if live_failed:
            passed = False
        if kind in READ_BACK_KINDS:
            ref = item.ref
            checker = item.checked_by
            checker = checker.strip().lower() if checker else ""
            expect = item.expect
            if not passed:
                if not live_failed:
                    why = f"did not pass (result={_clip(str(result))!r}); it proves nothing"
                    findings.append(("DOD-5", f"read-back #{number} ({kind}) {why}"))
                if result is not None or landed:
                    # A read of the system of record that disagrees (or no longer holds live).
                    # One with no result was never made: unchecked, it proves nothing, and it
                    # is not known to be missing either.
                    disagreed.append(number)
            elif not ref or ref.isspace():
                why = "cites no ref; cited proof must resolve, so it counts as an assertion"
                findings.append(("DOD-5", f"read-back #{number} ({kind}) {why}"))
            elif not checker or checker in _ACTOR_NAMES or checker == owner:
                findings.append(("DOD-2", _self_checked(number, kind, item.checked_by, checker)))
            elif kind == "http_contains" and not (
                isinstance(expect, str) and expect.strip() and not is_weak_label(expect)
            ):
                why = (
                    "has no expect text (the weak non_empty default is none), so it shows only "
                    "that the page answered; it counts as an assertion"
                )
                findings.append(("DOD-4", f"read-back #{number} ({kind}) {why}"))
            elif (
                # _is_loopback, inline: this runs for every read-back on millions of receipts
                (
                    "localhost" in (low := ref.lower())
                    or "127." in low
                    or "::1" in low
                    or "0.0.0.0" in low
                )
                and _LOOPBACK.search(low) is not None
                and "local" not in _outcome_families(outcome)
            ):
                why = (
                    f"reads {_clip(ref.strip())}, a loopback address: a local server is not the "
                    "live outcome unless the outcome names it; it counts as an artifact"
                )
                findings.append(("DOD-8", f"read-back #{number} ({kind}) {why}"))
                if level < 2:
                    level = 2
            elif signed is not None and not _signature_holds(signed, number - 1):
                why = (
                    "carries no signature that verifies against the trusted key, so nothing "
                    "shows the verifier rather than the actor observed it; it counts as an "
                    "assertion"
                )
                findings.append(("DOD-2", f"read-back #{number} ({kind}) {why}"))
            else:
                level = 3
                if counted is not None:
                    counted.append(number - 1)
        elif kind in ARTIFACT_KINDS:
            ref = item.ref
            if not passed:
                why = f"did not pass (result={_clip(str(result))!r}); it proves nothing"
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
            findings.append(("DOD-4", f"proof #{number} kind '{_clip(kind, 40)}' {why}"))

    if disagreed and level >= 3:
        # Every declared read-back has to hold: a task whose plan read 45 rows as 90 is not done
        # because its page check passed. The passing read shows part of the outcome, no more.
        numbers = ", ".join(f"#{n}" for n in disagreed)
        findings.append(
            (
                "DOD-4",
                f"read-back {numbers} disagreed with the claim, so the passing read-backs prove "
                "only part of the outcome; it counts as an artifact",
            )
        )
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
        missing = _missing_steps(view.proof, counted, signed)
        if missing:
            findings.append(("DOD-5", missing))
            level = 2

    business = view.business_outcome
    if level == 3 and business is not None and business.verified is True:
        if counted is None:
            level = 4
        else:
            # business_outcome is not signed: under signature checks, P4 needs a signed read-back
            # of the business outcome itself.
            unsigned = _unsigned_outcome(view, business, counted)
            if unsigned is None:
                level = 4
            else:
                findings.append(("DOD-2", unsigned))
    if counted is not None and signed is not None:
        _check_revenue(view, signed, findings)

    # The word rules. What a report says is read once per distinct report (reports repeat: agents
    # write them from templates); the target is read here, and the outcome only when it matters.
    if report:
        not_done, report_scaffold = (
            _report_facts(report) if len(report) <= _MEMO_TEXT else _read_report(report)
        )
    else:
        not_done = report_scaffold = None
    target = view.target

    # DOD-8: a scaffold named by the target or the report caps the proof at an artifact.
    if target or report_scaffold is not None:
        scaffold = _scaffold_signal(target, report_scaffold, outcome)
        if scaffold is not None:
            capped = 2 if level > 2 else level
            if claims_done or capped != level:
                findings.append(
                    (
                        "DOD-8",
                        f"{scaffold} is a scaffold, not the live outcome, and the outcome does "
                        f"not name it as the deliverable; the proof counts at most as "
                        f"{_NAMES[capped]}",
                    )
                )
            level = capped

    # DOD-7: the report's (and the status's own) words beat the status.
    said_by = "the report says"
    if not_done is None:
        not_done = status.not_done
        said_by = "the status itself says"

    proven = status.side  # the agent's own side-state word is never upgraded
    if proven is None:
        proven = verdict_side
    if proven is None:
        proven = _RUNG_OF_LEVEL[level]
        if not_done is not None and _RANKS[proven] > _EXECUTED_RANK:
            proven = Status.EXECUTED
        if verdict_rung is not None and _RANKS[verdict_rung] < _RANKS[proven]:
            proven = verdict_rung
    if not_done is not None and (claims_done or _RUNG_OF_LEVEL[level] is not proven):
        why = "the agent's own words beat its status, so the task is not done"
        findings.append(("DOD-7", f"{said_by} '{not_done}': {why}"))

    meets_bar = True
    if claims_done:
        if level < bar:
            meets_bar = False
            findings.append(
                (
                    "DOD-6",
                    f"{claim_source} '{_clip(claim_word)}' needs {_NAMES[bar]}; the proof reaches "
                    f"only {_NAMES[level]}, so the highest honest status is '{_VALUES[proven]}'",
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
        if not_done is not None:
            meets_bar = False
        if overruled is not None:
            meets_bar = False
            findings.append(("DOD-2", overruled))
    else:
        rung = status.rung
        if rung is not None and _RANKS[rung] > _RANKS[proven]:
            findings.append(
                (
                    "DOD-6",
                    f"claimed_status '{_VALUES[rung]}' is above what the proof shows "
                    f"({_NAMES[level]}); the highest honest status is '{_VALUES[proven]}'",
                )
            )

    # tuple.__new__ skips NamedTuple's Python-level constructor: this runs per receipt.
    return tuple.__new__(
        RawGrade,
        (
            _LEVELS[level],
            None if bar < 0 else _LEVELS[bar],
            claims_done,
            meets_bar,
            proven,
            tuple(findings) if findings else _NO_FINDINGS,
            claims_done and level >= 3 and not_done is None and overruled is None,
        ),
    )


#: The read-back kinds that observe a business outcome itself (money taken, a message sent, a
#: call made, an object created at a provider). Under signature checks, P4 needs a signed one of
#: these whose kind the business_outcome class names: a page or a row that matched is a read-back
#: (P3), not a reconciliation, and business_outcome.verified is not signed.
BUSINESS_READ_KINDS = frozenset({"payment", "sent_log", "call_log", "provider_object"})


def _kind_name(text: object) -> str:
    return text.strip().lower().replace("-", "_").replace(" ", "_") if isinstance(text, str) else ""


def _unsigned_outcome(view: ReceiptView, business: OutcomeView, counted: list[int]) -> str | None:
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
            and _signature_holds(signed, index)
        ):
            return float(revenue)
    return None


def _check_revenue(
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


def is_weak_label(expect: str) -> bool:
    """An expect that names the weak default ("non_empty (weak default)"), not a text to find."""
    name = _kind_name(expect)
    return name.startswith(("non_empty", "nonempty")) or "weak_default" in name


def _self_verdict(verdict: str, issuer: str | None, by_owner: bool) -> str:
    who = "the owner" if by_owner else "the actor"
    return (
        f"verdict '{_clip(verdict)}' was issued by '{_clip(issuer or '')}' ({who}); the actor "
        "can't grade itself, so the verdict is void and landed grades the proof instead"
    )


def _self_checked(number: int, kind: str, checked_by: str | None, checker: str) -> str:
    who = f"'{_clip(checked_by or '')}'" if checker else "nobody"
    return (
        f"read-back #{number} ({kind}) was checked by {who}, not by someone other than the "
        "actor and the owner; it counts as an assertion"
    )


def _live_failed(
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


def _missing_steps(
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
            if not _signature_holds(signed, index):
                continue
            result = str(item.result or "").strip().lower()
            kind = str(item.kind or "").strip().lower()
            if result != "pass" and kind not in _KNOWN_KINDS:
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


def _signature_holds(signed: Callable[[int], bool], index: int) -> bool:
    # A checker that raises has not shown the signature holds: fail closed.
    try:
        return signed(index) is True
    except Exception:
        return False


# --- the word rules ------------------------------------------------------------------------------


def _first_phrase(
    text: list[bytes],
    singles: frozenset[bytes],
    firsts: frozenset[bytes],
    phrases: frozenset[tuple[bytes, bytes]],
) -> str | None:
    """The first word or two-word phrase of ``text`` in the given tables, or None."""
    # The usual case is no hit; these set operations run in C, the ordered search below does not.
    if singles.isdisjoint(text) and (
        firsts.isdisjoint(text) or phrases.isdisjoint(itertools.pairwise(text))
    ):
        return None
    last = len(text) - 1
    for i, word in enumerate(text):
        if word in singles:
            return word.decode()
        if i < last and word in firsts and (word, text[i + 1]) in phrases:
            return f"{word.decode()} {text[i + 1].decode()}"
    return None


def _maybe_loopback(lowered: str) -> bool:
    return "localhost" in lowered or "127." in lowered or "::1" in lowered or "0.0.0.0" in lowered


def _is_loopback(text: str) -> bool:
    lowered = text.lower()
    return _maybe_loopback(lowered) and _LOOPBACK.search(lowered) is not None


# Reports up to this many characters are memoised; longer ones are read each time, so the memo's
# memory stays bounded (4,096 entries of at most 2 KB).
_MEMO_TEXT = 2048


def _read_report(report: str) -> tuple[str | None, str | None]:
    """The report's first DOD-7 phrase and its first scaffold word or phrase (DOD-8)."""
    if not report.isascii():  # fullwidth "FAILED" and "fáiled" read "failed"
        report = fold_text(report)
    text = report.encode("utf-8", "replace").translate(_WORD_BYTES).split()
    if _B_REPORT_TRIGGERS.isdisjoint(text):
        return None, None
    return (
        _first_not_done(report, text),
        _first_phrase(text, _B_SCAFFOLD_SET, _B_SCAFFOLD_FIRST, _B_SCAFFOLD_PAIRS),
    )


_B_IDIOM_WORDS = frozenset(
    {b"error", b"errors", b"failure", b"failures", b"failed", b"failing", b"free"}
)


def _first_not_done(text: str, tokens: list[bytes] | None = None) -> str | None:
    """The first DOD-7 word or phrase of ``text`` (its words ``tokens``, when already read),
    after the positive idioms are taken out."""
    if not text.isascii():
        text, tokens = fold_text(text), None
    if tokens is None:
        tokens = words(text)
    if not _B_IDIOM_WORDS.isdisjoint(tokens):
        tokens = words(POSITIVE_IDIOMS.sub(" ", text))
    return _first_phrase(tokens, _B_NOT_DONE, _B_NOT_DONE_FIRST, _B_NOT_DONE_PHRASES)


_report_facts = lru_cache(maxsize=4096)(_read_report)
_B_REPORT_TRIGGERS = _B_NOT_DONE | _B_NOT_DONE_FIRST | _B_SCAFFOLD_SET | _B_SCAFFOLD_FIRST
_B_TARGET_TRIGGERS = _B_SCAFFOLD_IN_TARGET | _B_SCAFFOLD_FIRST
_B_OUTCOME_TRIGGERS = _B_REPLACING | _B_SCAFFOLD_SET | _B_SCAFFOLD_FIRST | _B_LOCAL


@lru_cache(maxsize=256)
def _outcome_families(outcome: str | None) -> frozenset[str]:
    """The scaffold families the outcome names as the deliverable: {"mock"} for "a clickable
    mockup of the pricing page", none for "replace the mock with the live API"."""
    text = words(outcome)
    if _B_OUTCOME_TRIGGERS.isdisjoint(text) and not _is_loopback(outcome or ""):
        return _NO_FAMILIES
    if not text or not _B_REPLACING.isdisjoint(text):
        return _NO_FAMILIES
    families = {_B_SCAFFOLD[w] for w in _B_SCAFFOLD_SET.intersection(text)}
    if not _B_SCAFFOLD_FIRST.isdisjoint(text):
        families.update(_B_SCAFFOLD_PHRASES.get(pair, "") for pair in itertools.pairwise(text))
        families.discard("")
    if not _B_LOCAL.isdisjoint(text) or _is_loopback(outcome or ""):
        families.add("local")
    return frozenset(families)


_NO_FAMILIES: frozenset[str] = frozenset()


def _scaffold_signal(target: str | None, found: str | None, outcome: str | None) -> str | None:
    """Describe the first scaffold the target or the report (whose first scaffold word or phrase
    is ``found``) names, unless the outcome names it."""
    if target:
        low = target.lower()
        if (
            _maybe_loopback(low)
            and _LOOPBACK.search(low) is not None
            and "local" not in _outcome_families(outcome)
        ):
            return f"the target {_clip(target.strip())} (a loopback address)"
        text = target.encode("utf-8", "replace").translate(_WORD_BYTES).split()
        if not _B_TARGET_TRIGGERS.isdisjoint(text):
            in_target = _first_phrase(
                text, _B_SCAFFOLD_IN_TARGET, _B_SCAFFOLD_FIRST, _B_SCAFFOLD_PAIRS
            )
            if in_target is not None and _family(in_target) not in _outcome_families(outcome):
                return f"the target's '{in_target}'"
    if found is not None and _family(found) not in _outcome_families(outcome):
        return f"the report's '{found}'"
    return None


def _family(found: str) -> str:
    first, _, second = found.partition(" ")
    return SCAFFOLD_PHRASES[(first, second)] if second else SCAFFOLD_WORDS[first]
