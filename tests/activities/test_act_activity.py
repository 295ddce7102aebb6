"""The act activity in-process: what an act's error carries out of the actor."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from temporalio.exceptions import ApplicationError
from temporalio.testing import ActivityEnvironment

import landed
from landed.activities.act import ActActivities
from landed.task.messages import ActInput
from landed.task.names import CLAIM_OF_ANOTHER_RUN
from landed.task.spec import ActSpec

SECRET = "sk_live_" + "Q" * 24


def _run_with(fn: Any) -> ActActivities:
    return ActActivities({"leaky": fn}, {"api": SECRET, "db": f"postgresql://u:{SECRET}@h/x"}, "a1")


def _input() -> ActInput:
    return ActInput(task_id="t1", attempt=1, idempotency_key="t1", act=ActSpec(name="leaky"))


async def test_an_acts_error_text_leaves_the_actor_without_its_credentials() -> None:
    def leaky(spec: dict[str, Any], ctx: landed.ActContext) -> landed.ActReport:
        url = f"https://pay.example/charge?api_key={ctx.credential('api')}"
        raise RuntimeError(f"502 from {url} (dsn {ctx.credential('db')})")

    with pytest.raises(ApplicationError) as err:
        await ActivityEnvironment().run(_run_with(leaky).act, _input())
    assert SECRET not in err.value.message and "[redacted]" in err.value.message
    assert err.value.type == "RuntimeError" and not err.value.non_retryable
    assert err.value.__cause__ is None  # the original, with its text, stays on the actor


async def test_an_acts_own_application_error_keeps_its_kind_and_loses_the_secret() -> None:
    async def refusing(spec: dict[str, Any], ctx: landed.ActContext) -> landed.ActReport:
        raise ApplicationError(
            f"card declined for key {ctx.credential('api')}", type="Declined", non_retryable=True
        )

    with pytest.raises(ApplicationError) as err:
        await ActivityEnvironment().run(_run_with(refusing).act, _input())
    assert SECRET not in err.value.message
    assert err.value.type == "Declined" and err.value.non_retryable


async def test_an_acts_error_details_lose_the_secret_and_the_actor_logs_the_original(
    caplog: pytest.LogCaptureFixture,
) -> None:
    from temporalio.exceptions import ApplicationErrorCategory

    async def detailed(spec: dict[str, Any], ctx: landed.ActContext) -> landed.ActReport:
        raise ApplicationError(
            "declined",
            {"url": f"https://pay.example/x?key={ctx.credential('api')}"},
            type="Declined",
            category=ApplicationErrorCategory.BENIGN,
        )

    with pytest.raises(ApplicationError) as err:
        await ActivityEnvironment().run(_run_with(detailed).act, _input())
    assert SECRET not in repr(err.value.details), err.value.details
    assert err.value.category is ApplicationErrorCategory.BENIGN
    kept = [r for r in caplog.records if r.exc_info and "act 'leaky'" in r.getMessage()]
    assert kept, [r.getMessage() for r in caplog.records]


async def test_secrets_in_detail_keys_bytes_and_objects_are_redacted_and_a_cycle_is_dropped() -> (
    None
):
    from dataclasses import dataclass

    @dataclass
    class Call:
        url: str

    cycle: list[object] = []
    cycle.append(cycle)

    async def odd_details(spec: dict[str, Any], ctx: landed.ActContext) -> landed.ActReport:
        key = ctx.credential("api")
        raise ApplicationError(
            "declined", {key: 1}, key.encode(), Call(f"https://x/?k={key}"), cycle, type="Odd"
        )

    with pytest.raises(ApplicationError) as err:
        await ActivityEnvironment().run(_run_with(odd_details).act, _input())
    assert err.value.type == "Odd", err.value  # the act's own error, not a failure of ours
    assert SECRET not in repr(err.value.details), err.value.details
    assert len(err.value.details) == 3  # the cycle could not be written, so it is dropped


async def test_an_acts_report_leaves_the_actor_without_its_credentials() -> None:
    """A report that quotes a credential (a webhook URL whose token is in the path) reaches the
    receipt and the ledger: the credential is taken out there too, however it was written."""

    def echoing(spec: dict[str, Any], ctx: landed.ActContext) -> landed.ActReport:
        return landed.ActReport(
            claimed_status="done",
            report=f"POST https://hooks.example/services/{ctx.credential('api')}/ -> HTTP 200",
        )

    report = await ActivityEnvironment().run(_run_with(echoing).act, _input())
    assert SECRET not in report.report and "[redacted]" in report.report
    assert report.actor == "a1"


async def test_an_act_scheduled_under_another_runs_claim_runs_nothing() -> None:
    """A run reset from another can replay the other's ledger claim and schedule the act anew
    on it: the actor refuses that attempt before the act runs, with a permanent error the
    workflow reads as "another run was about to act". Its own run's claim runs as usual."""
    ran: list[str] = []

    def act(spec: dict[str, Any], ctx: landed.ActContext) -> landed.ActReport:
        ran.append(ctx.task_id)
        return landed.ActReport(claimed_status="done", report="wrote the row")

    env = ActivityEnvironment()
    env.info = dataclasses.replace(env.info, workflow_run_id="run-b")
    other = _input().model_copy(update={"claimed_for": "run-a"})
    with pytest.raises(ApplicationError) as err:
        await env.run(_run_with(act).act, other)
    assert err.value.type == CLAIM_OF_ANOTHER_RUN and err.value.non_retryable
    assert "run-a" in err.value.message and "run-b" in err.value.message
    assert err.value.details == ("run-a",)  # the run the workflow names as about to act
    assert ran == []
    own = _input().model_copy(update={"claimed_for": "run-b"})
    report = await env.run(_run_with(act).act, own)
    assert report.claimed_status == "done" and ran == ["t1"]


async def test_fifty_sync_acts_run_at_once_not_queued_behind_a_small_pool() -> None:
    """Fifty one-second sync acts in flight run together: each waits at a barrier that only
    fifty running threads can pass (asyncio's default pool, min(32, cpus + 4) threads, would
    leave most of them queued and the barrier broken)."""
    import asyncio
    import threading

    barrier = threading.Barrier(50, timeout=20)

    def slow(spec: dict[str, Any], ctx: landed.ActContext) -> landed.ActReport:
        barrier.wait()  # raises BrokenBarrierError unless all fifty run at once
        return landed.ActReport(claimed_status="done")

    actor = ActActivities({"slow": slow}, {}, "a1", threads=50)
    inputs = [
        ActInput(task_id=f"t{i}", attempt=1, idempotency_key=f"t{i}", act=ActSpec(name="slow"))
        for i in range(50)
    ]
    reports = await asyncio.gather(*(ActivityEnvironment().run(actor.act, i) for i in inputs))
    assert [r.claimed_status for r in reports] == ["done"] * 50


def test_the_actor_sizes_its_act_threads_from_its_settings() -> None:
    from landed.temporal.settings import ActorSettings

    assert ActorSettings(max_concurrent_activities=75).max_concurrent_activities == 75
    assert ActorSettings(act_threads=12).act_threads == 12
