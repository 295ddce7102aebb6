"""Blocking act code in a thread, reported only once the thread is done."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any, TypeVar

__all__ = ["to_the_end"]

T = TypeVar("T")


async def to_the_end(fn: Callable[..., T], *args: Any) -> T:
    """``asyncio.to_thread(fn, *args)`` that outlives its own cancellation.

    A thread cannot be stopped, so a cancelled act would otherwise report "not done" while its
    write is still on the way; the workflow's read-back could then miss it and run the act a
    second time. On cancellation this waits for the thread and then reports what it really did:
    its result, or its exception.
    """
    running = asyncio.ensure_future(asyncio.to_thread(fn, *args))
    try:
        return await asyncio.shield(running)
    except asyncio.CancelledError:
        while not running.done():
            try:
                await asyncio.wait({running})
            except asyncio.CancelledError:
                continue  # asked again: the answer is still "after the thread"
        return running.result()
