"""The role check's cache of positive answers, on a clock and a Temporal client the test holds:
a kept answer is asked again in the background before it runs out, so starts under steady
load never wait for the ask; a refusal heard in the background reaches the next start."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from landed.task.checkable import PreflightOutput
from landed.task.spec import TaskSpec
from landed.temporal.role_check import RoleCheck, TaskRefused

pytestmark = [pytest.mark.asyncio, pytest.mark.timeout(30)]


class Roles:
    """Answers each ask with ``answer``; ``held`` keeps the answers back until it is set."""

    def __init__(self) -> None:
        self.asks = 0
        self.answer = PreflightOutput()
        self.held = asyncio.Event()
        self.held.set()

    async def execute_workflow(self, *args: Any, **kwargs: Any) -> PreflightOutput:
        self.asks += 1
        await self.held.wait()
        return self.answer


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def _spec(task_id: str) -> TaskSpec:
    return TaskSpec.model_validate(
        {
            "task_id": task_id,
            "owner": "ops",
            "outcome": "one row",
            "target": "db: rows",
            "act": {"name": "rows.write"},
            "proof_plan": [
                {
                    "action": "write the row",
                    "probe": {"kind": "record", "source": "db", "query": "select 1"},
                    "expect": {"type": "count", "value": 1},
                }
            ],
        }
    )


def _check(roles: Roles, clock: Clock) -> RoleCheck:
    return RoleCheck(roles, "runner-q", clock=clock)  # type: ignore[arg-type]


async def _settle() -> None:
    for _ in range(5):
        await asyncio.sleep(0)


async def test_a_kept_answer_is_asked_again_before_it_runs_out_and_no_start_waits() -> None:
    roles, clock = Roles(), Clock()
    check = _check(roles, clock)
    await check.check(_spec("t-1"))
    assert roles.asks == 1
    clock.now += 4  # in the first half of its life: used as it is
    await check.check(_spec("t-2"))
    assert roles.asks == 1
    clock.now += 3  # in the second half: used, and asked again behind it
    roles.held.clear()
    await asyncio.wait_for(check.check(_spec("t-3")), 1)  # did not wait for the ask
    await check.check(_spec("t-4"))  # one ask in flight is shared, not repeated
    assert roles.asks == 2
    roles.held.set()
    await _settle()
    clock.now += 4  # past the first answer's life (110), early in the second's (117)
    await asyncio.wait_for(check.check(_spec("t-5")), 1)
    assert roles.asks == 2


async def test_a_refusal_heard_in_the_background_refuses_the_next_start() -> None:
    roles, clock = Roles(), Clock()
    check = _check(roles, clock)
    await check.check(_spec("t-1"))
    roles.answer = PreflightOutput(problems=["no act named 'rows.write' on this actor"])
    clock.now += 6
    await check.check(_spec("t-2"))  # still the kept answer; the refusal arrives behind it
    await _settle()
    with pytest.raises(TaskRefused, match=r"rows\.write"):
        await check.check(_spec("t-3"))
    assert roles.asks == 3


async def test_a_background_ask_that_fails_drops_the_kept_answer() -> None:
    roles, clock = Roles(), Clock()
    check = _check(roles, clock)
    await check.check(_spec("t-1"))

    async def broken(*args: Any, **kwargs: Any) -> PreflightOutput:
        raise RuntimeError("the server went away")

    roles.execute_workflow = broken  # type: ignore[method-assign]
    clock.now += 6
    await check.check(_spec("t-2"))
    await _settle()
    with pytest.raises(RuntimeError, match="went away"):
        await check.check(_spec("t-3"))  # asked in the foreground: the caller hears it
