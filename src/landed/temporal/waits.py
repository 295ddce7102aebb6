"""Waiting on Temporal through what passes: its poller limit and a server restart or recovery.
Nothing was observed either time, so the wait goes on; past a server's restart window it stops
and the caller hears it."""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from temporalio.client import WorkflowHandle
from temporalio.service import RPCError, RPCStatusCode

from landed.receipts.model import Receipt

__all__ = ["through_restart", "wait_result"]

_T = TypeVar("_T")

# Temporal caps how many long polls one namespace serves at once ("namespace concurrent poller
# limit exceeded", RESOURCE_EXHAUSTED): thousands of waiters in one process hit it, and the
# SDK's own retries give up after a few tries. A waiter that is turned away only waits longer:
# it tries again after a jittered, growing pause, so the waiters spread out instead of retrying
# in step.
_BUSY_FIRST_S = 0.2
_BUSY_MAX_S = 10.0


# A server that restarts (a deploy, a crash) answers UNAVAILABLE for a moment; a waiter waits
# that long, and no longer: past it the server is gone, which the caller must hear.
_UNAVAILABLE_FOR_S = 120.0


async def wait_result(handle: WorkflowHandle[Any, Receipt]) -> Receipt:
    """``handle.result()`` that waits through Temporal's poller limit and a server restart
    instead of raising them (nothing was observed either time: the task runs on)."""
    pause = _BUSY_FIRST_S
    unavailable_since: float | None = None
    while True:
        try:
            return await handle.result()
        except RPCError as err:
            now = time.monotonic()
            if err.status == RPCStatusCode.UNAVAILABLE:
                unavailable_since = unavailable_since or now
                if now - unavailable_since > _UNAVAILABLE_FOR_S:
                    raise
            elif err.status == RPCStatusCode.RESOURCE_EXHAUSTED:
                unavailable_since = None
            else:
                raise
        await asyncio.sleep(random.uniform(pause / 2, pause))
        pause = min(pause * 2, _BUSY_MAX_S)


async def through_restart(call: Callable[[], Awaitable[_T]]) -> _T:
    """``call()`` again while the server answers UNAVAILABLE ("shard status unknown" while it
    recovers, a restart), for as long as a waiter waits: a start refused that way started nothing
    (and a start that did land is found by its task id on the next try)."""
    pause = _BUSY_FIRST_S
    since: float | None = None
    while True:
        try:
            return await call()
        except RPCError as err:
            now = time.monotonic()
            since = since or now
            if err.status != RPCStatusCode.UNAVAILABLE or now - since > _UNAVAILABLE_FOR_S:
                raise
        await asyncio.sleep(random.uniform(pause / 2, pause))
        pause = min(pause * 2, _BUSY_MAX_S)
