"""Grading one receipt by the DoD v1.0: each rule with a case that passes and one that fails."""

from __future__ import annotations

import ast
import copy
import importlib
import itertools
import re
import unicodedata
from pathlib import Path
from typing import Any

import pytest
from helpers.source import parse
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import landed.receipts.grading as grading_module
import landed.receipts.ladder as ladder_module
from landed import Grade, ProofItem, ProofLevel, Receipt, Status, grade
from landed.receipts.grading import NOT_DONE_PHRASES, NOT_DONE_WORDS

READ_BACK = {
    "kind": "http_contains",
    "ref": "https://example.com/pricing",
    "expect": "Team plan",
    "checked_by": "runner",
    "checked_at": "2026-11-07T01:00:00Z",
    "result": "pass",
}
ARTIFACT = {
    "kind": "pull_request",
    "ref": "https://github.com/example/site/pull/12",
    "checked_by": "actor",
    "result": "pass",
}
BASE: dict[str, Any] = {
    "dod": "1.0",
    "task_id": "publish-pricing-page",
    "owner": "worker-a",
    "outcome": "Pricing page is live at its URL and shows the new plan name",
    "target": "https://example.com/pricing",
    "claimed_status": "done",
    "report": "Merged the change and confirmed the page.",
    "exit_code": 0,
    "proof": [ARTIFACT, READ_BACK],
}


def receipt(**changes: Any) -> Receipt:
    data = copy.deepcopy(BASE)
    data.update(changes)
    return Receipt.model_validate(data)


def proof(**changes: Any) -> dict[str, Any]:
    return {**READ_BACK, **changes}


def rules(result: Grade) -> list[str]:
    return [finding.rule for finding in result.findings]


# --- proof levels --------------------------------------------------------------------------------


@pytest.mark.parametrize("result", ["ok", "passed", "OK", "success", "true", "pass!", "p ass", ""])
def test_only_the_result_pass_counts_as_passing(result: str) -> None:
    # A proof passes only on "pass" (case and surrounding space aside): "ok", "passed" and the
    # like are not results landed writes, so they prove nothing.
    graded = grade(receipt(proof=[proof(result=result)]))
    assert graded.proof_level is ProofLevel.P1 and not graded.meets_bar
    assert "DOD-5" in rules(graded)


@pytest.mark.parametrize("result", ["pass", "PASS", " Pass ", "pass\n"])
def test_the_result_pass_is_read_without_case_or_surrounding_space(result: str) -> None:
    graded = grade(receipt(proof=[proof(result=result)]))
    assert graded.proof_level is ProofLevel.P3 and graded.meets_bar


@pytest.mark.parametrize(
    ("kind", "level"),
    [
        ("HTTP_CONTAINS", ProofLevel.P3),
        (" record ", ProofLevel.P3),
        ("Pull_Request", ProofLevel.P2),
        ("\tCOMMIT\n", ProofLevel.P2),
        ("http-contains", ProofLevel.P1),  # only case and surrounding space are normalised
        ("httpcontains", ProofLevel.P1),
    ],
)
def test_proof_kinds_are_read_without_case_or_surrounding_space(
    kind: str, level: ProofLevel
) -> None:
    item = proof(kind=kind) if level is not ProofLevel.P2 else {**ARTIFACT, "kind": kind}
    assert grade(receipt(proof=[item])).proof_level is level


def test_p3_read_back_by_someone_else_meets_the_done_bar() -> None:
    result = grade(receipt())
    assert result.proof_level is ProofLevel.P3
    assert result.claims_done and result.meets_bar
    assert result.proven_status is Status.VERIFIED
    assert result.findings == []


@pytest.mark.parametrize("verdict", ["failed", "planned", "held", "executed"])
def test_an_independent_verdict_that_the_task_is_not_done_wins_over_the_claim(
    verdict: str,
) -> None:
    """DOD-2: the verifier issues the verdict. A runner that graded the task below done
    outweighs the agent's "done", however good the cited proof looks."""
    result = grade(receipt(verdict=verdict, verdict_by="runner"))
    assert result.proof_level is ProofLevel.P3
    assert not result.meets_bar
    assert any(f.rule == "DOD-2" and f"verdict '{verdict}'" in f.message for f in result.findings)
    # The agent's own verdict changes nothing (it is void), and "verified" agrees.
    assert grade(receipt(verdict="verified", verdict_by="runner")).meets_bar


@pytest.mark.parametrize("checker", ["actor", "ACTOR ", "worker-a", "Worker-A", "agent", None, ""])
def test_p3_needs_a_checker_other_than_actor_and_owner(checker: str | None) -> None:
    result = grade(receipt(proof=[ARTIFACT, proof(checked_by=checker)]))
    assert result.proof_level is ProofLevel.P2  # the artifact still counts
    assert not result.meets_bar
    assert "DOD-2" in rules(result)


def test_p3_needs_the_read_back_to_have_passed() -> None:
    result = grade(receipt(proof=[proof(result="fail")]))
    assert result.proof_level is ProofLevel.P1
    assert not result.meets_bar
    assert rules(result)[:1] == ["DOD-5"]


def test_p3_needs_a_ref_that_can_resolve() -> None:
    result = grade(receipt(proof=[proof(ref="  ")]))
    assert result.proof_level is ProofLevel.P1
    assert "DOD-5" in rules(result)


def test_http_contains_without_expect_text_is_an_assertion() -> None:
    passing = grade(receipt(proof=[proof(kind="record", expect=None)]))
    assert passing.proof_level is ProofLevel.P3  # other kinds carry their expectation elsewhere
    failing = grade(receipt(proof=[proof(expect=None)]))
    assert failing.proof_level is ProofLevel.P1
    assert "DOD-4" in rules(failing)


@pytest.mark.parametrize(
    "kind", ["commit", "pull_request", "file", "test_run", "screenshot", "log"]
)
def test_p2_is_an_artifact_that_passed(kind: str) -> None:
    result = grade(receipt(proof=[{**ARTIFACT, "kind": kind}]))
    assert result.proof_level is ProofLevel.P2
    assert result.proven_status is Status.BUILT
    failed = grade(receipt(proof=[{**ARTIFACT, "kind": kind, "result": "fail"}]))
    assert failed.proof_level is ProofLevel.P1
    assert "DOD-5" in rules(failed)


def test_any_other_kind_is_an_assertion() -> None:
    result = grade(receipt(proof=[{"kind": "vibes", "ref": "x", "result": "pass"}]))
    assert result.proof_level is ProofLevel.P1
    assert "DOD-4" in rules(result)


def test_p0_is_a_status_alone_and_p1_a_description() -> None:
    bare = grade(receipt(proof=[], report=None, exit_code=None))
    assert bare.proof_level is ProofLevel.P0
    told = grade(receipt(proof=[], report="I did it."))
    assert told.proof_level is ProofLevel.P1
    assert not bare.meets_bar and not told.meets_bar


def test_p4_is_p3_plus_a_verified_business_outcome() -> None:
    outcome = {"class": "visible_content", "ref": "https://example.com/pricing", "verified": True}
    result = grade(receipt(claimed_status="reconciled", business_outcome=outcome))
    assert result.proof_level is ProofLevel.P4
    assert result.meets_bar and result.proven_status is Status.RECONCILED
    unverified = grade(receipt(business_outcome={**outcome, "verified": False}))
    assert unverified.proof_level is ProofLevel.P3
    without_read_back = grade(receipt(proof=[ARTIFACT], business_outcome=outcome))
    assert without_read_back.proof_level is ProofLevel.P2


# --- DOD-2 ---------------------------------------------------------------------------------------


def test_dod2_a_verdict_by_someone_else_stands() -> None:
    result = grade(receipt(verdict="done", verdict_by="runner"))
    assert "DOD-2" not in rules(result)
    assert result.meets_bar


@pytest.mark.parametrize("issuer", ["worker-a", "actor", None])
def test_dod2_a_verdict_by_the_owner_or_actor_is_void(issuer: str | None) -> None:
    result = grade(receipt(proof=[ARTIFACT], verdict="done", verdict_by=issuer))
    assert "DOD-2" in rules(result)
    assert not result.meets_bar  # landed grades the proof instead: P2 is not done
    message = next(f.message for f in result.findings if f.rule == "DOD-2")
    assert "void" in message


def test_dod2_a_done_verdict_is_a_claim_even_when_the_status_is_lower() -> None:
    result = grade(receipt(claimed_status="executed", proof=[ARTIFACT], verdict="done"))
    assert result.claims_done and not result.meets_bar
    assert "DOD-6" in rules(result)


# --- DOD-3 ---------------------------------------------------------------------------------------


def test_dod3_a_clean_exit_proves_nothing() -> None:
    result = grade(receipt(proof=[], exit_code=0))
    assert not result.meets_bar
    assert "DOD-3" in rules(result)
    # The exit code is no rung at all: the same receipt without one is graded the same.
    assert result.proof_level is grade(receipt(proof=[], exit_code=None)).proof_level
    assert result.proof_level < ProofLevel.P2


def test_dod3_is_silent_when_the_read_back_carries_the_claim() -> None:
    result = grade(receipt(exit_code=0))
    assert result.meets_bar
    assert "DOD-3" not in rules(result)


# --- DOD-5 (and DOD-4 from a live re-read) -------------------------------------------------------


def test_dod5_a_live_failure_recorded_on_the_proof_downgrades_it() -> None:
    live = {"live": {"ok": False, "rule": "DOD-4", "reason": "the page no longer says Team plan"}}
    result = grade(receipt(proof=[ARTIFACT, proof(landed=live)]))
    assert result.proof_level is ProofLevel.P2
    assert not result.meets_bar
    assert rules(result)[:1] == ["DOD-4"]
    gone = {"live": {"ok": False, "rule": "DOD-5", "reason": "HTTP 404"}}
    assert "DOD-5" in rules(grade(receipt(proof=[proof(landed=gone)])))


def test_dod5_a_live_pass_never_upgrades_a_failed_proof() -> None:
    live = {"live": {"ok": True, "reason": "contains it now"}}
    result = grade(receipt(proof=[proof(result="fail", landed=live)]))
    assert result.proof_level is ProofLevel.P1
    assert not result.meets_bar


def test_dod5_a_live_pass_keeps_a_passing_proof() -> None:
    live = {"live": {"ok": True, "reason": "contains the expected text"}}
    assert grade(receipt(proof=[proof(landed=live)])).meets_bar


# --- DOD-6 ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("word", ["done", "verified", "Done.", "DONE", "completed", "success"])
def test_dod6_done_words_need_p3(word: str) -> None:
    assert grade(receipt(claimed_status=word)).meets_bar
    result = grade(receipt(claimed_status=word, proof=[ARTIFACT]))
    assert result.claims_done and not result.meets_bar
    assert "DOD-6" in rules(result)
    assert result.proven_status is Status.BUILT


def test_dod6_reconciled_needs_p4() -> None:
    result = grade(receipt(claimed_status="reconciled"))
    assert result.proof_level is ProofLevel.P3
    assert result.required_level is ProofLevel.P4
    assert not result.meets_bar
    assert "DOD-6" in rules(result)
    assert result.proven_status is Status.VERIFIED


@pytest.mark.parametrize("word", ["not done", "isn't done", "executed", "held", "blocked"])
def test_dod6_words_that_claim_nothing_done_have_no_bar(word: str) -> None:
    result = grade(receipt(claimed_status=word, proof=[]))
    assert not result.claims_done and result.meets_bar
    assert result.required_level is None


@pytest.mark.parametrize(
    "word",
    [
        "done, no errors",
        "Done - did not need review",
        "no problems, done",
        "\uff24\uff2f\uff2e\uff25",  # fullwidth DONE
        "don\u00e9",
        "ok",
        "OKAY",
        "resolved",
        "merged",
        "passed",
        "closed",
        "fixed",
        "published",
        "\u2705",
        "\u2714\ufe0f",
        "not blocked, done",
        "never mind: done",
    ],
)
def test_dod6_a_done_word_not_directly_negated_is_a_claim(word: str) -> None:
    # A negation elsewhere in the status does not cancel the done word (fail closed).
    result = grade(receipt(claimed_status=word, proof=[]))
    assert result.claims_done, word
    assert result.required_level is ProofLevel.P3
    assert not result.meets_bar


@pytest.mark.parametrize(
    "word",
    ["not done", "never done", "isn\u2019t done", "not yet done", "not-done", "not \u2705"],
)
def test_dod6_a_negation_directly_before_the_done_word_cancels_it(word: str) -> None:
    result = grade(receipt(claimed_status=word, proof=[]))
    assert not result.claims_done, word


@pytest.mark.parametrize(
    "word", ["deployed", "scheduled", "executed", "sent", "delivered", "queued", "built"]
)
def test_dod6_ladder_rungs_below_verified_are_not_done_claims(word: str) -> None:
    assert not grade(receipt(claimed_status=word, proof=[])).claims_done


@settings(max_examples=300, deadline=None)
@given(
    word=st.one_of(
        st.text(max_size=30),
        st.lists(
            st.sampled_from(
                [*sorted(ladder_module.DONE_WORDS), "not", "isn't", "no", ",", "yet", "-", "x"]
            ),
            max_size=5,
        ).map(" ".join),
    )
)
def test_the_ladder_and_the_grader_read_a_claim_the_same_way(word: str) -> None:
    # One claim logic: landed.required_level / DONE_WORDS and the grader agree on every status.
    assert grading_module.DONE_CLAIM_WORDS == ladder_module.DONE_WORDS
    expected = ladder_module.required_level(word)
    result = grade(receipt(claimed_status=word, proof=[]))
    assert result.required_level == expected
    assert result.claims_done is (expected is not None)


def test_dod6_a_lower_rung_above_the_proof_is_flagged_but_not_a_done_claim() -> None:
    result = grade(receipt(claimed_status="deployed", proof=[ARTIFACT]))
    assert result.meets_bar  # nothing claimed done
    assert "DOD-6" in rules(result)
    assert result.proven_status is Status.BUILT
    honest = grade(receipt(claimed_status="built", proof=[ARTIFACT]))
    assert "DOD-6" not in rules(honest)


def test_dod6_a_side_state_is_never_upgraded() -> None:
    result = grade(receipt(claimed_status="held"))
    assert result.proof_level is ProofLevel.P3
    assert result.proven_status is Status.HELD


# --- DOD-7 ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "report",
    [
        "Published; the DNS change is still pending.",
        "Blocked on the registrar.",
        "waiting for approval",
        "Incomplete: two pages left.",
        "Partially migrated.",
        "I could not reach the API.",
        "I couldn't reach the API.",
        "I couldn\u2019t reach the API.",
        "Unable to log in.",
        "Not yet live.",
        "Work in progress.",
        "no longer blocked",  # negation is not parsed: fail closed, documented
        "status: pending_review",
    ],
)
def test_dod7_the_reports_words_beat_a_done_status(report: str) -> None:
    result = grade(receipt(report=report))
    assert result.proof_level is ProofLevel.P3
    assert not result.meets_bar
    assert "DOD-7" in rules(result)
    assert result.proven_status is Status.EXECUTED


@pytest.mark.parametrize(
    "report",
    [
        "The insert failed.",
        "Errored halfway.",
        "Didn't finish.",
        "Didn\u2019t finish.",
        "Did not insert all rows.",
        "Only 22 of 45 rows inserted.",
        "Skipped the last batch.",
        "Rolled back after a constraint error.",
        "Haven't deployed yet.",
        "Hasn't propagated.",
        "queued",
        "Aborted.",
        "The worker crashed.",
        "Timed out waiting for the API.",
        "Retrying the upload.",
        "Reverted the migration.",
        "errors: 2",
        "no errors, but the insert failed",
        "\uff26\uff21\uff29\uff2c\uff25\uff24",  # fullwidth FAILED
    ],
)
def test_dod7_failure_words_keep_a_task_from_verified(report: str) -> None:
    result = grade(receipt(report=report))
    assert result.proof_level is ProofLevel.P3
    assert not result.meets_bar
    assert "DOD-7" in rules(result)
    assert result.proven_status is Status.EXECUTED


@pytest.mark.parametrize(
    "report",
    [
        "Merged the change and confirmed the page.",
        "Unblocked the deploy and shipped it.",
        "",
        "Inserted 45 rows; read back 45.",
        "Done, no errors.",
        "Tests: 45 passed, 0 failed.",
        "Published without errors.",
        "Error-free run; read the page back.",
    ],
)
def test_dod7_plain_reports_pass(report: str) -> None:
    result = grade(receipt(report=report))
    assert result.meets_bar
    assert "DOD-7" not in rules(result)


def test_dod7_the_status_text_itself_counts() -> None:
    result = grade(receipt(claimed_status="done (partial)"))
    assert result.claims_done and not result.meets_bar
    assert "DOD-7" in rules(result)


# --- DOD-8 ---------------------------------------------------------------------------------------


def test_dod8_a_loopback_target_is_a_scaffold() -> None:
    local = "http://localhost:3000/pricing"
    result = grade(receipt(target=local, proof=[proof(ref=local)]))
    assert result.proof_level is ProofLevel.P2
    assert not result.meets_bar
    assert "DOD-8" in rules(result)


@pytest.mark.parametrize(
    "ref",
    ["http://127.0.0.1:8080/", "http://[::1]/x", "http://0.0.0.0:5000", "http://app.localhost/"],
)
def test_dod8_a_read_back_of_a_loopback_address_is_only_an_artifact(ref: str) -> None:
    result = grade(receipt(proof=[proof(ref=ref)]))
    assert result.proof_level is ProofLevel.P2
    assert "DOD-8" in rules(result)


def test_dod8_a_host_that_only_looks_local_is_live() -> None:
    ref = "https://localhost.example.com/pricing"
    assert grade(receipt(target=ref, proof=[proof(ref=ref)])).meets_bar


@pytest.mark.parametrize(
    "report", ["Shipped a mockup of the page.", "Stubbed the payment call.", "Placeholder copy."]
)
def test_dod8_a_scaffold_in_the_report_caps_the_claim(report: str) -> None:
    result = grade(receipt(report=report))
    assert result.proof_level is ProofLevel.P2
    assert not result.meets_bar
    assert "DOD-8" in rules(result)


def test_dod8_a_named_deliverable_is_not_a_scaffold() -> None:
    mockup = grade(
        receipt(
            outcome="A clickable mockup of the pricing page for review",
            report="Built the mockup and confirmed it renders.",
        )
    )
    assert mockup.meets_bar and "DOD-8" not in rules(mockup)
    local = "http://127.0.0.1:8080/status"
    dev = grade(
        receipt(
            outcome="The status page on the local test server",
            target=local,
            proof=[proof(ref=local)],
        )
    )
    assert dev.meets_bar and dev.proof_level is ProofLevel.P3


def test_dod8_an_outcome_that_replaces_the_scaffold_does_not_name_it() -> None:
    result = grade(
        receipt(outcome="Replace the mock with the live pricing API", report="Wired the mock in.")
    )
    assert not result.meets_bar
    assert "DOD-8" in rules(result)


# --- signatures ----------------------------------------------------------------------------------


def test_a_signature_that_verifies_keeps_p3() -> None:
    result = grade(receipt(), signature_ok=lambda _r, _p: True)
    assert result.proof_level is ProofLevel.P3


def test_a_signature_that_fails_makes_the_read_back_an_assertion() -> None:
    seen: list[str] = []

    def reject(r: Receipt, p: ProofItem) -> bool:
        seen.append(p.kind)
        return False

    result = grade(receipt(), signature_ok=reject)
    assert seen == ["http_contains"]  # asked about read-backs only
    assert result.proof_level is ProofLevel.P2
    assert not result.meets_bar
    message = next(f.message for f in result.findings if f.rule == "DOD-2")
    assert "signature" in message


def test_a_signature_check_that_raises_fails_closed() -> None:
    def broken(r: Receipt, p: ProofItem) -> bool:
        raise RuntimeError("key store unreachable")

    assert not grade(receipt(), signature_ok=broken).meets_bar


# --- properties ----------------------------------------------------------------------------------


def test_grading_is_deterministic_and_grade_is_frozen() -> None:
    first, second = grade(receipt(report="blocked")), grade(receipt(report="blocked"))
    assert first == second
    with pytest.raises(ValueError):
        first.meets_bar = True  # type: ignore[misc]


def _top_level_imports(path: str | None) -> set[str]:
    """The top-level package of every name a module imports (and every ``from X``)."""
    assert path is not None
    tree = parse(Path(path).read_text())
    return {
        alias.name.split(".")[0]
        for node in ast.walk(tree)
        if isinstance(node, ast.Import | ast.ImportFrom)
        for alias in node.names
    } | {
        (node.module or "").split(".")[0]
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom)
    }


#: The grading code's modules: ``grading`` and the siblings it is split into.
_GRADING_MODULES = ("grading", "claims", "findings", "views", "words")


def _imported_modules(path: str | None) -> set[str]:
    """Every module a file imports (``import X`` and ``from X import ...``), fully named."""
    assert path is not None
    tree = parse(Path(path).read_text())
    return {
        alias.name
        for node in ast.walk(tree)
        if isinstance(node, ast.Import)
        for alias in node.names
    } | {node.module or "" for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}


@pytest.mark.parametrize("name", _GRADING_MODULES)
def test_the_grading_module_imports_nothing_with_side_effects(name: str) -> None:
    # The workflow sandbox imports these modules: no I/O, clock, randomness or network. Each
    # imports only the standard library's pure modules, pydantic and landed's own pure grading
    # modules (and the ladder and receipt model they grade against).
    module = importlib.import_module(f"landed.receipts.{name}")
    names = _imported_modules(module.__file__)
    allowed = {
        "__future__",
        "itertools",
        "re",
        "collections.abc",
        "functools",
        "typing",
        "pydantic",
        "landed.receipts.ladder",
        "landed.receipts.model",
        *(f"landed.receipts.{sibling}" for sibling in _GRADING_MODULES),
    }
    assert names <= allowed, names - allowed
    # The claim logic it calls lives in the ladder module: pure stdlib there too.
    ladder_names = _top_level_imports(ladder_module.__file__)
    assert ladder_names <= {
        "__future__",
        "annotations",
        "re",
        "unicodedata",
        "enum",
        "IntEnum",
        "StrEnum",
    }


_text = st.text(
    alphabet=st.sampled_from(list("abcdeilnoprstuy '\u2019_-.,\n0123456789\u00e9")), max_size=60
)
_phrases = st.sampled_from(
    sorted(NOT_DONE_WORDS) + [" ".join(pair) for pair in sorted(NOT_DONE_PHRASES)] + ["can't"]
)
_reports = st.lists(st.one_of(_text, _phrases), max_size=6).map(" ".join)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(report=_reports)
def test_dod7_matches_exactly_the_phrases_it_lists(report: str) -> None:
    # The fast path (one tokenization of target and report) must agree with a plain reading.
    # The positive idioms ("no errors", "0 failed") are taken out first, by their documented list.
    plain = "".join(
        c for c in unicodedata.normalize("NFKD", report.lower()) if not unicodedata.combining(c)
    )
    words = re.findall(r"[a-z]+", grading_module.POSITIVE_IDIOMS.sub(" ", plain))
    pairs = set(itertools.pairwise(words))
    expected = bool(set(words) & NOT_DONE_WORDS or pairs & NOT_DONE_PHRASES)
    result = grade(receipt(report=report))
    assert ("DOD-7" in rules(result)) is expected
    if expected:
        assert not result.meets_bar


_str = st.one_of(st.none(), st.text(max_size=30), st.sampled_from(["done", "actor", "pass", ""]))
_proof_items = st.fixed_dictionaries(
    {
        "kind": st.one_of(
            st.sampled_from(["http_contains", "record", "commit", "payment", "other", " LOG "]),
            st.text(max_size=12),
        ),
        "ref": _str,
        "expect": st.one_of(st.none(), st.text(max_size=12), st.integers()),
        "checked_by": _str,
        "result": st.one_of(st.sampled_from(["pass", "fail", " Pass "]), _str),
        "landed": st.one_of(
            st.none(),
            st.fixed_dictionaries({"live": st.dictionaries(st.text(max_size=6), _str, max_size=3)}),
        ),
    }
)
_receipts = st.builds(
    Receipt,
    task_id=st.text(max_size=10),
    claimed_status=st.one_of(
        st.sampled_from(["done", "reconciled", "held", "executed", "not done", "Done!"]),
        st.text(max_size=20),
    ),
    owner=_str,
    outcome=_str,
    target=st.one_of(_str, st.sampled_from(["http://localhost:1/", "https://x.example/"])),
    report=st.one_of(_str, _reports),
    exit_code=st.one_of(st.none(), st.integers()),
    proof=st.lists(_proof_items.map(ProofItem.model_validate), max_size=4),
    verdict=_str,
    verdict_by=_str,
)


@pytest.mark.slow
@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(r=_receipts, sign=st.sampled_from([None, True, False]))
def test_grading_never_raises_and_explains_every_miss(r: Receipt, sign: bool | None) -> None:
    check = None if sign is None else (lambda _r, _p: sign)
    result = grade(r, signature_ok=check)
    assert isinstance(result, Grade)
    assert all(re.fullmatch(r"DOD-\d+", f.rule) for f in result.findings)
    if result.claims_done and not result.meets_bar:
        assert result.findings, "a done claim that misses its bar must say why"
    if result.meets_bar and result.claims_done:
        assert result.required_level is not None
        assert result.proof_level >= result.required_level


# --- every read-back has to hold -----------------------------------------------------------------


@pytest.mark.parametrize("failed", ["mismatch", "duplicated", "vacuous", "empty", "probe-error"])
def test_one_passing_read_back_cannot_outvote_one_that_disagreed(failed: str) -> None:
    rows = proof(kind="record", ref="orders-db:orders", expect="count(45)", result=failed)
    graded = grade(receipt(proof=[rows, READ_BACK]))
    assert graded.proof_level is ProofLevel.P2
    assert not graded.meets_bar
    assert any(f.rule == "DOD-4" and "#1" in f.message for f in graded.findings)


def test_read_backs_that_all_pass_prove_the_claim() -> None:
    rows = proof(kind="record", ref="orders-db:orders", expect="count(45)")
    graded = grade(receipt(proof=[rows, READ_BACK]))
    assert graded.proof_level is ProofLevel.P3 and graded.meets_bar


def test_a_read_back_with_no_result_is_unchecked_not_a_disagreement() -> None:
    # No result means nobody read it: it proves nothing, but it does not cancel a passing read.
    graded = grade(receipt(proof=[proof(result=None), READ_BACK]))
    assert graded.proof_level is ProofLevel.P3 and graded.meets_bar


def test_a_cited_artifact_that_did_not_resolve_downgrades_the_claim() -> None:
    """DOD-5: "A missing one downgrades the claim": a pull request checked and not found takes
    the claim down a rung, though a read-back passed."""
    graded = grade(receipt(proof=[{**ARTIFACT, "result": "fail"}, READ_BACK]))
    assert graded.proof_level is ProofLevel.P2 and not graded.meets_bar
    assert any(f.rule == "DOD-5" and "downgrades" in f.message for f in graded.findings)


def test_a_not_done_word_in_the_status_is_said_to_come_from_the_status() -> None:
    graded = grade(receipt(claimed_status="blocked", report=None, proof=[]))
    (dod7,) = [f for f in graded.findings if f.rule == "DOD-7"]
    assert dod7.message.startswith("the status itself says 'blocked'")


def test_the_verifiers_verdict_caps_the_honest_status_as_the_workflow_set_it() -> None:
    """The runner held the task at executed (a plan step failed, or another run may have
    acted): the checker's honest status is that rung too, not the P3 the passing read shows."""
    graded = grade(receipt(verdict="executed", verdict_by="runner"))
    assert graded.proven_status is Status.EXECUTED and not graded.meets_bar
    planned = grade(receipt(claimed_status="executed", verdict="planned", verdict_by="runner"))
    assert planned.proven_status is Status.PLANNED


def test_a_not_done_verdict_stands_even_when_its_issuer_shares_the_owners_name() -> None:
    """Void as a grade, a verdict of "not done" still stands: an owner named like the runner
    cannot make the runner's refusal disappear."""
    graded = grade(receipt(owner="runner", verdict="failed", verdict_by="runner"))
    assert not graded.meets_bar
    assert any("says the task is not done" in f.message for f in graded.findings)
