"""Claims from outside Temporal as data: parsing each kind, bad lines, identity, and the verdict
of a claim that cannot be read back (no Temporal here: pure functions)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest

from landed.receipts.grading import grade
from landed.receipts.model import Receipt
from landed.signing import KeyPair, TrustStore
from landed.task.claim_grade import claim_report, claim_spec, evidence_receipt, no_read_back_reason
from landed.task.claims_in import (
    BadClaim,
    VerifyClaimInput,
    claim_of,
    claim_workflow_id,
    parse_claim,
)

PLAN = [
    {
        "action": "publish",
        "probe": {"kind": "http", "source": "site", "url": "/posts/count?slug=a"},
        "expect": {"type": "count", "value": 1},
    }
]


def _parse(record: Any, line: int = 7) -> VerifyClaimInput | BadClaim | None:
    data = record if isinstance(record, bytes) else json.dumps(record).encode()
    return parse_claim(line, data)


def _ok(record: Any) -> VerifyClaimInput:
    parsed = _parse(record)
    assert isinstance(parsed, VerifyClaimInput), parsed
    return parsed


def _bad(record: Any) -> str:
    parsed = _parse(record)
    assert isinstance(parsed, BadClaim), parsed
    assert parsed.line == 7
    return parsed.reason


def test_each_kind_is_told_apart() -> None:
    receipt = _ok({"dod": "1.0", "task_id": "t", "claimed_status": "done"})
    log = _ok({"id": 42, "status": "done"})
    contract = _ok({"task_id": "t", "outcome": "a post", "proof_plan": PLAN})
    declared = _ok({"kind": "log", "task_id": "t", "claimed_status": "done", "dod": "1.0"})
    assert (receipt.kind, log.kind, contract.kind, declared.kind) == (
        "receipt",
        "log",
        "contract",
        "log",
    )
    assert log.task_id == "42" and log.claim.claimed_status == "done"
    # A contract says its outcome now holds: "done" unless it says otherwise.
    assert contract.claim.claimed_status == "done" and len(contract.proof_plan) == 1
    # Its own plan is the claimant's check: only an operator's outcome class is read back.
    assert not contract.can_read_back and not log.can_read_back
    by_class = _ok({"task_id": "t", "outcome": "posts.published", "params": {"slug": "a"}})
    assert by_class.kind == "contract" and by_class.can_read_back


def test_an_unknown_kind_is_a_claim_that_cannot_be_read_back() -> None:
    odd = _ok({"kind": "vibes", "task_id": "t", "claimed_status": "done", "proof_plan": PLAN})
    assert odd.kind == "unknown" and odd.declared_kind == "vibes"
    assert not odd.can_read_back and claim_spec(odd).proof_plan == []
    assert "'vibes'" in (no_read_back_reason(odd) or "")


@pytest.mark.parametrize(
    ("record", "says"),
    [
        (b"{oops", "not valid JSON"),
        (b'{"task_id": "a", "task_id": "b", "claimed_status": "done"}', "appears twice"),
        (b"[1, 2]", "one JSON object"),
        ({"claimed_status": "done"}, 'add "task_id"'),
        ({"task_id": "has space", "claimed_status": "done"}, "not a landed task id"),
        ({"task_id": "t"}, 'add "claimed_status"'),
        ({"task_id": "t", "claimed_status": "done", "attempt": 0}, "attempt 0"),
        ({"task_id": "t", "claimed_status": "done", "proof_plan": [{"x": 1}]}, "proof_plan"),
    ],
)
def test_a_bad_line_names_the_problem_and_the_fix(record: Any, says: str) -> None:
    assert says in _bad(record)


def test_blank_lines_are_skipped() -> None:
    assert parse_claim(3, b"   \t") is None


def test_identity_is_the_task_attempt_and_what_it_is_about() -> None:
    one = _ok({"task_id": "t", "claimed_status": "failed", "outcome": "x", "proof_plan": PLAN})
    two = _ok(
        {"task_id": "t", "claimed_status": "done", "outcome": "x", "proof_plan": PLAN, "attempt": 2}
    )
    other = _ok({"task_id": "t", "claimed_status": "done", "outcome": "y", "proof_plan": PLAN})
    # Two attempts of one task are one task to the ledger; other work under its id is not.
    assert one.digest == two.digest != other.digest
    assert claim_workflow_id("t", 1) != claim_workflow_id("t", 2)
    assert claim_of(claim_workflow_id("t", 2), "t")
    assert not claim_of(claim_workflow_id("t", 2), "u") and not claim_of("t#claim-x", "t")
    assert not claim_of("t", "t")


def test_the_agents_words_are_a_report_never_a_verdict() -> None:
    claim = _ok(
        {
            "task_id": "t",
            "claimed_status": "done",
            "report": "shipped",
            "cost": {"usd": -5},
            "landed": {"actor": "bot@outside"},
        }
    )
    report = claim_report(claim)
    # A negative cost would lower every other task's cost per verified task: dropped.
    assert report.cost.usd is None and report.claimed_status == "done"
    assert report.actor == "bot@outside"


def _evidence(record: dict[str, Any], trusted: TrustStore) -> Receipt:
    claim = _ok(record)
    return evidence_receipt(
        claim,
        why=no_read_back_reason(claim) or "",
        runner="runner@test",
        run_id="run-1",
        trusted=trusted,
        settled_at=datetime.now(UTC),
    )


def test_no_read_back_settles_at_the_evidence_level_never_higher() -> None:
    trusted = TrustStore([KeyPair.generate().public_key])
    done = {"task_id": "t", "claimed_status": "done"}
    cited = {**done, "proof": [{"kind": "record", "ref": "db:1", "result": "pass"}]}
    verified = {**done, "verdict": "verified"}
    for record in (done, cited, verified):
        receipt = _evidence(record, trusted)
        assert receipt.landed is not None
        ext = receipt.landed.model_dump()
        checker = grade(Receipt.model_validate(record), signature_ok=trusted.signature_ok)
        # The checker's grade, as `landed check --trust` gives it, not the agent's own verdict.
        assert receipt.verdict == checker.proven_status.value != "verified"
        assert ext["meets_bar"] is False and ext["proof_level"] == checker.proof_level.label
        assert any("could not be read back" in f for f in ext["findings"])
        assert receipt.verdict_by == "runner@test"
