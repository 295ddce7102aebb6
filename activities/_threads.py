"""Blocking act code in a thread of the actor's own pool, reported only once the thread is done."""

from __future__ import annotations

import asyncio
import contextvars
import functools
from collections.abc import Callable
from concurrent.futures import Executor
from typing import Any, TypeVar

__all__ = ["to_the_end"]

T = TypeVar("T")


async def to_the_end(fn: Callable[..., T], *args: Any, executor: Executor | None = None) -> T:
    """Run ``fn(*args)`` in ``executor`` (default: the loop's), outliving its own cancellation.

    The actor passes a pool sized to its activity concurrency: asyncio's default pool has
    min(32, cpus + 4) threads, so with more sync acts than that in flight the rest queue behind
    them, whatever the worker's max_concurrent_activities says.

    A thread cannot be stopped, so a cancelled act would otherwise report "not done" while its
    write is still on the way; the workflow's read-back could then miss it and run the act a
    second time. On cancellation this waits for the thread and then reports what it really did:
    its result, or its exception.
    """
    # As asyncio.to_thread does: the thread sees the caller's context variables.
    call = functools.partial(contextvars.copy_context().run, fn, *args)
    running = asyncio.get_running_loop().run_in_executor(executor, call)
    try:
        return await asyncio.shield(running)
    except asyncio.CancelledError:
        while not running.done():
            try:
                await asyncio.wait({running})
            except asyncio.CancelledError:
                continue  # asked again: the answer is still "after the thread"
        return running.result()
