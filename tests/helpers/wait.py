"""Waiting for state another process or workflow produces: one bounded poll for every test.

A test that polls says what it waits for; on timeout the failure names it and the last value
seen, so a slow machine shows up as a clear message, never as a hang.
"""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Awaitable, Callable
from datetime import timedelta
from typing import TypeVar

from temporalio.testing import WorkflowEnvironment

T = TypeVar("T")

__all__ = ["skip", "until", "until_sync"]


async def until(
    what: str,
    probe: Callable[[], T | Awaitable[T]],
    *,
    timeout: float = 30.0,
    every: float = 0.05,
) -> T:
    """Call ``probe`` (sync or async) until it returns something truthy; return that value.

    Exceptions from ``probe`` propagate: a probe that may fail while the state is not there yet
    catches its own error and returns a falsy value.
    """
    deadline = time.monotonic() + timeout
    last: T | None = None
    while True:
        value = probe()
        last = await value if inspect.isawaitable(value) else value
        if last:
            return last
        if time.monotonic() > deadline:
            raise AssertionError(f"not reached within {timeout:g}s: {what} (last seen {last!r})")
        await asyncio.sleep(every)


def until_sync(
    what: str, probe: Callable[[], T], *, timeout: float = 30.0, every: float = 0.05
) -> T:
    """The blocking form of :func:`until`, for tests that run no event loop."""
    deadline = time.monotonic() + timeout
    while True:
        last = probe()
        if last:
            return last
        if time.monotonic() > deadline:
            raise AssertionError(f"not reached within {timeout:g}s: {what} (last seen {last!r})")
        time.sleep(every)


# One skip request per 5 virtual minutes. The test server answers a skip only once it has run
# every timer in it, each a workflow task (a tripwire wakes every 30 s to read its ledger), and
# the client gives up on one request after 30 s of real time: 20 minutes asked at once took
# longer than that on two loaded cores.
_SKIP_STEP = timedelta(minutes=5)


async def skip(env: WorkflowEnvironment, span: timedelta) -> None:
    """Skip ``span`` of virtual time on a time-skipping ``env``, in steps the client's request
    timeout does not cut short."""
    left = span
    while left > timedelta(0):
        step = min(left, _SKIP_STEP)
        await env.sleep(step)
        left -= step
