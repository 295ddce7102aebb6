"""A receipt's verdict in plain words: ``Receipt.done`` and ``Receipt.why``."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest

import landed

SETTLED = datetime(2026, 12, 4, 12, 0, tzinfo=UTC)


def _read_back(result: str, value: Any, expect: str = "count(3)", **extra: Any) -> dict[str, Any]:
    observation = {"value": value, "message": extra.pop("message", "")}
    return {
        "kind": "record",
        "ref": "shop-db:select count(*) from orders",
        "expect": expect,
        "result": result,
        "checked_by": "verifier@host:1",
        "landed": {"action": "add 3 orders", "observation": observation, **extra},
    }


def _receipt(verdict: str, proof: list[dict[str, Any]], **fields: Any) -> landed.Receipt:
    body = {
        "task_id": "t-1",
        "claimed_status": "done",
        "verdict": verdict,
        "verdict_by": "runner@host:2",
        "settled_at": SETTLED,
        "proof": proof,
        **fields,
    }
    return landed.Receipt.model_validate(body)


@pytest.mark.parametrize("verdict", ["verified", "reconciled"])
def test_a_settled_verified_or_reconciled_receipt_is_done(verdict: str) -> None:
    receipt = _receipt(verdict, [_read_back("pass", 3)])
    assert receipt.done is True
    assert receipt.why == (
        "the read-back found what the plan expects: 'add 3 orders' read 3 (count(3))."
    )


def test_a_read_back_judged_by_what_it_holds_says_it_matched() -> None:
    page = _read_back("pass", None, expect='contains("We launched")')
    assert _receipt("verified", [page]).why == (
        "the read-back found what the plan expects: 'add 3 orders' matched "
        '(contains("We launched")).'
    )


@pytest.mark.parametrize(
    "verdict", ["planned", "executed", "held", "blocked", "failed", "reversed", "superseded", None]
)
def test_every_other_verdict_is_not_done(verdict: str | None) -> None:
    assert _receipt(verdict, [_read_back("pass", 3)]).done is False  # type: ignore[arg-type]


def test_a_receipt_not_settled_yet_is_not_done_whatever_its_verdict_reads() -> None:
    receipt = _receipt("verified", [_read_back("pass", 3)], settled_at=None)
    assert receipt.done is False
    assert receipt.why == "the task has not settled yet (verdict so far: verified)."
    fresh = _receipt(None, [], settled_at=None)  # type: ignore[arg-type]
    assert fresh.why == "the task has not settled yet and has no verdict so far."


def test_why_names_what_a_mismatching_read_back_found() -> None:
    receipt = _receipt("planned", [_read_back("mismatch", 2)])
    assert receipt.why == (
        "the read-back of 'add 3 orders' found 2 where count(3) was expected (mismatch)."
    )


def test_why_says_a_probe_error_observed_nothing() -> None:
    failed = _read_back("probe-error", None, message="no such table: orders")
    receipt = _receipt("executed", [failed])
    assert receipt.why == (
        "the read-back of 'add 3 orders' observed nothing (no such table: orders)."
    )


def test_why_falls_back_to_the_first_finding_when_every_read_back_passed() -> None:
    receipt = _receipt(
        "executed",
        [_read_back("pass", 3)],
        landed={"findings": ["unconfirmed: plan step #1 read pass (3), then empty (0) 1 s later"]},
    )
    assert not receipt.done
    assert receipt.why == (
        "not done (executed): unconfirmed: plan step #1 read pass (3), then empty (0) 1 s later."
    )


def test_why_says_when_nothing_was_read_back() -> None:
    receipt = _receipt("planned", [])
    assert receipt.why == ("not done (planned): nothing was read back, so nothing shows it landed.")


def test_a_done_key_in_the_receipts_json_cannot_make_it_done() -> None:
    receipt = _receipt("planned", [_read_back("mismatch", 2)], done=True, why="trust me")
    assert receipt.done is False
    assert receipt.why.startswith("the read-back of 'add 3 orders' found 2")


def test_the_json_keeps_its_fields_and_adds_none() -> None:
    receipt = _receipt("verified", [_read_back("pass", 3)])
    dumped = json.loads(receipt.model_dump_json(by_alias=True, exclude_none=True))
    assert "done" not in dumped and "why" not in dumped
    assert {"task_id", "claimed_status", "verdict", "verdict_by", "settled_at", "proof"} <= set(
        dumped
    )


def test_a_stopped_task_leads_with_its_finding_over_a_read_back() -> None:
    finding = "DOD-9: blocked before any act: the verifier has no source 'shop-db'"
    failed = _read_back("probe-error", None, message="refused")
    receipt = _receipt("blocked", [failed], landed={"findings": [finding]})
    assert receipt.why == f"not done (blocked): {finding}."
    # The same read-back on a task that acted and was graded: the read-back says why.
    graded = _receipt("planned", [failed], landed={"findings": [finding]})
    assert graded.why == "the read-back of 'add 3 orders' observed nothing (refused)."
