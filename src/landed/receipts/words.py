"""The words the grading rules read, and the word rules: DOD-7 (not done) and DOD-8 (scaffold).

Text is read as words: lowercased runs of ASCII letters. Anything else (digits, punctuation,
apostrophes, "_", non-ASCII) splits words, so "couldn't" reads as "couldn t" and
"pending_review" as "pending review". A word next to a digit or an accent still counts: the
rules err towards flagging.
"""

from __future__ import annotations

import itertools
import re
from functools import lru_cache

from landed.receipts.ladder import DONE_WORDS, fold_text

__all__ = [
    "DONE_CLAIM_WORDS",
    "MEMO_TEXT",
    "NOT_DONE_PHRASES",
    "NOT_DONE_WORDS",
    "POSITIVE_IDIOMS",
    "SCAFFOLD_PHRASES",
    "SCAFFOLD_WORDS",
    "clip",
    "first_not_done",
    "is_loopback",
    "outcome_families",
    "read_report",
    "report_facts",
    "scaffold_signal",
    "words",
]

# This module runs inside the Temporal workflow sandbox: no I/O, no clock, no randomness. Its only
# state is constant tables and bounded memos (lru_cache) of pure functions of one string.

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


def clip(text: str, limit: int = 80) -> str:
    """``text`` cut to ``limit`` characters, with an ellipsis when it was longer."""
    return text if len(text) <= limit else text[: limit - 1] + "\u2026"


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


def is_loopback(text: str) -> bool:
    """``text`` names a loopback host (localhost, 127/8, 0.0.0.0, ::1): the one loopback test of
    a read-back's ref, a target and an outcome. The substring tests run first because they are
    cheap and almost always miss; the pattern then decides."""
    lowered = text.lower()
    return (
        "localhost" in lowered or "127." in lowered or "::1" in lowered or "0.0.0.0" in lowered
    ) and _loopback_host(lowered)


# A read-back's ref is read twice (the usual path, then its finding) and is often the target too:
# the pattern's last few answers are kept, so a text read again costs a lookup, not a search.
@lru_cache(maxsize=16)
def _loopback_host(lowered: str) -> bool:
    return _LOOPBACK.search(lowered) is not None


# Reports up to this many characters are memoised; longer ones are read each time, so the memo's
# memory stays bounded (4,096 entries of at most 2 KB).
MEMO_TEXT = 2048


def read_report(report: str) -> tuple[str | None, str | None]:
    """The report's first DOD-7 phrase and its first scaffold word or phrase (DOD-8)."""
    if not report.isascii():  # fullwidth "FAILED" and "fáiled" read "failed"
        report = fold_text(report)
    text = report.encode("utf-8", "replace").translate(_WORD_BYTES).split()
    if _B_REPORT_TRIGGERS.isdisjoint(text):
        return None, None
    return (
        first_not_done(report, text),
        _first_phrase(text, _B_SCAFFOLD_SET, _B_SCAFFOLD_FIRST, _B_SCAFFOLD_PAIRS),
    )


_B_IDIOM_WORDS = frozenset(
    {b"error", b"errors", b"failure", b"failures", b"failed", b"failing", b"free"}
)


def first_not_done(text: str, tokens: list[bytes] | None = None) -> str | None:
    """The first DOD-7 word or phrase of ``text`` (its words ``tokens``, when already read),
    after the positive idioms are taken out."""
    if not text.isascii():
        text, tokens = fold_text(text), None
    if tokens is None:
        tokens = words(text)
    if not _B_IDIOM_WORDS.isdisjoint(tokens):
        tokens = words(POSITIVE_IDIOMS.sub(" ", text))
    return _first_phrase(tokens, _B_NOT_DONE, _B_NOT_DONE_FIRST, _B_NOT_DONE_PHRASES)


#: ``read_report`` memoised, for reports up to ``MEMO_TEXT`` characters.
report_facts = lru_cache(maxsize=4096)(read_report)
_B_REPORT_TRIGGERS = _B_NOT_DONE | _B_NOT_DONE_FIRST | _B_SCAFFOLD_SET | _B_SCAFFOLD_FIRST
_B_TARGET_TRIGGERS = _B_SCAFFOLD_IN_TARGET | _B_SCAFFOLD_FIRST
_B_OUTCOME_TRIGGERS = _B_REPLACING | _B_SCAFFOLD_SET | _B_SCAFFOLD_FIRST | _B_LOCAL


@lru_cache(maxsize=256)
def outcome_families(outcome: str | None) -> frozenset[str]:
    """The scaffold families the outcome names as the deliverable: {"mock"} for "a clickable
    mockup of the pricing page", none for "replace the mock with the live API"."""
    text = words(outcome)
    if _B_OUTCOME_TRIGGERS.isdisjoint(text) and not is_loopback(outcome or ""):
        return _NO_FAMILIES
    if not text or not _B_REPLACING.isdisjoint(text):
        return _NO_FAMILIES
    families = {_B_SCAFFOLD[w] for w in _B_SCAFFOLD_SET.intersection(text)}
    if not _B_SCAFFOLD_FIRST.isdisjoint(text):
        families.update(_B_SCAFFOLD_PHRASES.get(pair, "") for pair in itertools.pairwise(text))
        families.discard("")
    if not _B_LOCAL.isdisjoint(text) or is_loopback(outcome or ""):
        families.add("local")
    return frozenset(families)


_NO_FAMILIES: frozenset[str] = frozenset()


def scaffold_signal(target: str | None, found: str | None, outcome: str | None) -> str | None:
    """Describe the first scaffold the target or the report (whose first scaffold word or phrase
    is ``found``) names, unless the outcome names it."""
    if target:
        if is_loopback(target) and "local" not in outcome_families(outcome):
            return f"the target {clip(target.strip())} (a loopback address)"
        text = target.encode("utf-8", "replace").translate(_WORD_BYTES).split()
        if not _B_TARGET_TRIGGERS.isdisjoint(text):
            in_target = _first_phrase(
                text, _B_SCAFFOLD_IN_TARGET, _B_SCAFFOLD_FIRST, _B_SCAFFOLD_PAIRS
            )
            if in_target is not None and _family(in_target) not in outcome_families(outcome):
                return f"the target's '{in_target}'"
    if found is not None and _family(found) not in outcome_families(outcome):
        return f"the report's '{found}'"
    return None


def _family(found: str) -> str:
    first, _, second = found.partition(" ")
    return SCAFFOLD_PHRASES[(first, second)] if second else SCAFFOLD_WORDS[first]
