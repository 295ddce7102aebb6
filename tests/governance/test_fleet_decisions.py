"""The fleet's pure decisions: the harness pool's rotation and cool-down (GOV-10), the paused
wait and its blocked report (GOV-4, DOD-9), cost by phase (GOV-8) and the scorecard's figures."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from landed.governance.cost import VerifySpend, cost_by_phase
from landed.governance.fleet import blocked_by_switch, pause_wait
from landed.governance.harness import (
    COOL_AFTER,
    COOL_DOWN,
    HarnessPool,
    HarnessRelease,
    release_backoff,
)
from landed.governance.receipt import blocker_of
from landed.receipts.grading import evaluate
from landed.receipts.model import Cost, LandedExtension, Receipt
from landed.receipts.scorecard import ScoreTally
from landed.task.gate_messages import FleetGateAnswer, FleetSwitch
from landed.task.messages import ActReport

T0 = datetime(2026, 12, 2, 12, 0, tzinfo=UTC)


def _fail(pool: HarnessPool, queue: str, at: datetime) -> None:
    pool.failed(HarnessRelease(queue=queue, error="usage limit", at=at))


def test_the_pool_rotates_to_the_next_queue_after_a_release() -> None:
    pool = HarnessPool(["a", "b", "c"])
    assert pool.choose(T0).queue == "a"
    _fail(pool, "a", T0)
    assert pool.choose(T0).queue == "b"
    assert pool.choose(T0).queue == "c"
    assert pool.choose(T0).queue == "a"


def test_a_harness_failing_n_times_in_a_row_cools_down_then_returns() -> None:
    pool = HarnessPool(["a", "b"])
    for _ in range(COOL_AFTER):
        _fail(pool, "a", T0)
    assert pool.cool_until["a"] == T0 + COOL_DOWN
    # While a cools down, every choice is b, whatever the rotation says.
    assert {pool.choose(T0 + timedelta(seconds=s)).queue for s in range(5)} == {"b"}
    assert pool.choose(T0 + COOL_DOWN).queue in {"a", "b"}
    assert "a" not in pool.choose(T0 + COOL_DOWN).cooling


def test_a_success_between_failures_resets_the_count() -> None:
    pool = HarnessPool(["a"])
    for _ in range(COOL_AFTER - 1):
        _fail(pool, "a", T0)
    pool.worked("a")
    _fail(pool, "a", T0)
    assert "a" not in pool.cool_until


def test_no_healthy_harness_is_a_blocked_report_naming_each_harness() -> None:
    pool = HarnessPool(["a", "b"])
    for queue in ("a", "b") * COOL_AFTER:
        _fail(pool, queue, T0)
    choice = pool.choose(T0)
    assert choice.queue is None
    report = pool.none_healthy(choice.cooling, "each one failed too often in a row")
    assert report.claimed_status == "blocked"
    assert report.blocked_on is not None and "a (out until" in report.blocked_on
    assert report.clear_by is not None and "operator" in report.clear_by


def test_release_backoff_grows_and_is_bounded() -> None:
    waits = [release_backoff(n) for n in range(1, 12)]
    assert waits[0] == timedelta(seconds=2) and waits[1] == timedelta(seconds=4)
    assert max(waits) == timedelta(seconds=60) and waits == sorted(waits)


def test_a_long_pause_waits_longer_between_gates() -> None:
    assert pause_wait(timedelta(0)) == timedelta(seconds=1)
    assert pause_wait(timedelta(minutes=30)) > pause_wait(timedelta(minutes=1))
    assert pause_wait(timedelta(hours=5)) == timedelta(minutes=5)


def test_a_time_cap_passing_while_paused_is_blocked_naming_who_paused() -> None:
    switch = FleetSwitch(paused=True, by="ops-anna", reason="incident", at=T0)
    report = blocked_by_switch(FleetGateAnswer(may_act=False, fleet_id="f1", switch=switch))
    assert report.claimed_status == "blocked"
    assert report.blocked_on is not None and "paused by ops-anna" in report.blocked_on
    assert "incident" in report.blocked_on and "landed resume" in (report.clear_by or "")
    unread = blocked_by_switch(FleetGateAnswer(may_act=False, unreadable="timeout"))
    assert unread.blocked_on is not None and "could not be read" in unread.blocked_on


def test_a_blocked_report_without_a_condition_still_parks_and_says_nobody_was_named() -> None:
    assert blocker_of(ActReport(claimed_status="done")) is None
    parked = blocker_of(ActReport(claimed_status="blocked", report="waiting on legal"))
    assert parked == {
        "condition": "waiting on legal",
        "clear_by": parked["clear_by"] if parked else "",
    }
    assert parked is not None and "nobody was named" in parked["clear_by"]


def test_cost_by_phase_prices_probe_time_and_keeps_unknown_act_cost_unknown() -> None:
    spend = VerifySpend(reads=3, probe_ms=2000.0, metered_usd=0.01)
    cost = cost_by_phase(Cost(input_tokens=10, output_tokens=5, usd=0.5), spend, 0.25)
    assert cost["verify"] == {
        "reads": 3,
        "probe_seconds": 2.0,
        "metered_usd": 0.01,
        "usd": 0.51,
    }
    assert cost["usd"] == 1.01
    assert cost_by_phase(Cost(), spend, 0.25)["usd"] is None


def _receipt(task_id: str, verify_usd: float, releases: int) -> Receipt:
    return Receipt(
        task_id=task_id,
        owner="agent",
        claimed_status="done",
        verdict="blocked",
        verdict_by="runner",
        cost=Cost(usd=1.0),
        landed=LandedExtension.model_validate(
            {
                "cost": {"verify": {"usd": verify_usd}},
                "harness": {"releases": [{"queue": "q"}] * releases},
            }
        ),
    )


def test_the_scorecard_counts_verify_cost_and_harness_releases_apart() -> None:
    tally = ScoreTally()
    for i, (usd, releases) in enumerate([(0.5, 2), (0.25, 0)]):
        receipt = _receipt(f"t{i}", usd, releases)
        tally.add(receipt, evaluate(receipt))
    card = tally.scorecard()
    assert card.verify_cost_usd == 0.75
    assert card.cost_usd == 2.75  # the acts' 2.0 and the verifier's 0.75
    assert card.harness_releases == 2


def test_the_exporter_counts_the_verify_phase_and_harness_releases_from_receipts() -> None:
    from landed.ledger.base import LedgerRow
    from landed.telemetry.aggregate import Board

    board = Board(max_label_values=10)
    for sequence, receipt in enumerate([_receipt("t0", 0.5, 2), _receipt("t1", 0.25, 1)], 1):
        row = LedgerRow.of(receipt)
        board.add_row(sequence, row.body.decode(), row.sha256)
    assert board.cost[("verify", "agent", "")] == 0.75
    assert board.cost[("act", "agent", "")] == 2.0
    assert board.counts["landed_harness_releases_total"][("agent", "")] == 3
