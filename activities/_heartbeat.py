"""A background heartbeat for activities whose single step may run longer than its timeout."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

from temporalio import activity

__all__ = ["heartbeating"]


@contextlib.asynccontextmanager
async def heartbeating(*details: object) -> AsyncIterator[None]:
    """Heartbeat every third of the heartbeat timeout (at most 5 s) until the block ends.

    A live worker keeps its activity alive however long one act or probe takes; a killed one
    stops beating, and Temporal declares the attempt lost within the heartbeat timeout instead
    of waiting out the whole start-to-close timeout.

    The first beat waits one interval: the heartbeat timeout runs from the attempt's start, so
    a beat at the start proves nothing the start didn't. ``details`` ride on every beat; Temporal
    hands the last ones to the workflow when the attempt times out.
    """
    timeout = activity.info().heartbeat_timeout
    every = 5.0 if timeout is None else max(0.2, min(5.0, timeout.total_seconds() / 3))

    async def beat() -> None:
        while True:
            await asyncio.sleep(every)
            activity.heartbeat(*details)

    task = asyncio.create_task(beat())
    try:
        yield
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
