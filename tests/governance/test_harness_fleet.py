"""The fleet-wide harness cool-down's pure decisions (GOV-10), without Temporal."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from landed.cli.fleet_harness import cooling_lines
from landed.governance.harness import (
    COOL_AFTER,
    COOL_DOWN,
    COOL_WINDOW,
    HarnessHealth,
    HarnessPool,
    cooling_at,
    fleet_failed,
)
from landed.task.gate_messages import HarnessFailure

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def _fail(health: HarnessHealth, queue: str, at: datetime, key: str) -> HarnessHealth:
    return fleet_failed(health, HarnessFailure(queue=queue, at=at, key=key, error="limit"))


def test_failures_from_different_tasks_add_up_to_a_cool_down() -> None:
    health = HarnessHealth()
    for i in range(COOL_AFTER - 1):
        health = _fail(health, "q1", T0 + timedelta(seconds=i), f"task{i}/1")
    assert cooling_at(health, T0 + timedelta(minutes=1)) == {}
    health = _fail(health, "q1", T0 + timedelta(seconds=9), "taskX/1")
    assert cooling_at(health, T0 + timedelta(minutes=1)) == {
        "q1": T0 + timedelta(seconds=9) + COOL_DOWN
    }
    assert cooling_at(health, T0 + timedelta(seconds=10) + COOL_DOWN) == {}


def test_a_resent_report_counts_once() -> None:
    health = HarnessHealth()
    for _ in range(COOL_AFTER + 2):
        health = _fail(health, "q1", T0, "same-task/1")
    assert health.cool_until == {} and health.recent["q1"] == [T0]


def test_failures_further_apart_than_the_window_do_not_cool() -> None:
    health = HarnessHealth()
    for i in range(COOL_AFTER * 2):
        health = _fail(health, "q1", T0 + i * COOL_WINDOW, f"t{i}")
    assert health.cool_until == {}


def test_a_pool_skips_what_the_fleet_cooled() -> None:
    pool = HarnessPool(["q1", "q2"])
    pool.heard({"q1": T0 + COOL_DOWN, "other": T0 + COOL_DOWN})
    assert pool.choose(T0).queue == "q2" and pool.releases == []
    assert pool.cool_until == {"q1": T0 + COOL_DOWN}
    assert HarnessPool(["q1", "q2"]).choose(T0).queue == "q1"


def test_status_lines_name_the_harness_and_until_when() -> None:
    assert cooling_lines(None, T0) == ["harnesses: none cooling down"]
    health = HarnessHealth(cool_until={"q1": T0 + COOL_DOWN}, last_error={"q1": "usage limit"})
    lines = cooling_lines(health, T0)
    assert lines[1] == f"  q1: out until {(T0 + COOL_DOWN).isoformat()} — usage limit"
    assert cooling_lines(health, T0 + COOL_DOWN) == ["harnesses: none cooling down"]


def test_the_fleet_view_stays_small_enough_for_a_memo() -> None:
    """Many harnesses and reports: the memo Temporal stores stays far below its 32 KiB cap."""
    health = HarnessHealth()
    for i in range(2000):
        at = T0 + timedelta(seconds=i)
        health = _fail(health, f"actor-queue-{i % 300:04d}", at, f"{'r' * 36}/{i}")
        health = fleet_failed(
            health, HarnessFailure(queue="hot", at=at, key=f"hot/{i}", error="e" * 500)
        )
    assert len(health.model_dump_json()) < 16 * 1024
    assert "hot" in health.cool_until
