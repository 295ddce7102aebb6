"""The reconcile loop: one VerifyClaim per line, at most N in flight, offsets committed in order.

A line's offset is committed only once its workflow has been started (the server recorded it)
and every line before it is started or reported bad: a restarted ``--follow`` then starts at
most the claims that were in flight again, and those attach to their running or settled
workflow by id instead of verifying twice.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from temporalio.client import Client as TemporalClient

from landed.cli.reconcile_tail import Line, Notice, Offset, Tail, save_offset
from landed.task.claims_in import BadClaim, VerifyClaimInput, parse_claim
from landed.temporal.claims import other_claim, start_claim, wait_result

__all__ = ["Committer", "Tally", "reconcile"]

#: How often the committed offset is written to the state file (and once at the end).
_FLUSH_S = 0.25

Event = dict[str, Any]


@dataclass
class Tally:
    lines: int = 0
    started: int = 0
    existing: int = 0
    settled: int = 0
    verified: int = 0
    not_verified: int = 0
    invalid: int = 0
    failed: int = 0

    def as_dict(self) -> dict[str, int]:
        return dict(self.__dict__)


@dataclass
class Committer:
    """Lines in read order; the committed offset is the end of the longest done prefix."""

    pending: deque[list[Any]] = field(default_factory=deque)
    committed: Offset | None = None

    def add(self, end: Offset) -> list[Any]:
        slot = [end, False]
        self.pending.append(slot)
        return slot

    def done(self, slot: list[Any]) -> None:
        slot[1] = True
        while self.pending and self.pending[0][1]:
            self.committed = self.pending.popleft()[0]


async def reconcile(
    temporal: TemporalClient,
    tail: Tail,
    *,
    task_queue: str,
    concurrency: int,
    emit: Callable[[Event], None],
    state: Path | None = None,
) -> Tally:
    """Reconcile every line ``tail`` gives; ``emit`` receives each event as it happens."""
    tally = Tally()
    commits = Committer()
    slots = asyncio.Semaphore(concurrency)
    running: set[asyncio.Task[None]] = set()
    saved: list[Offset | None] = [None]

    def flush() -> None:
        if state is not None and commits.committed not in (None, saved[0]):
            assert commits.committed is not None
            save_offset(state, commits.committed)
            saved[0] = commits.committed

    async def flusher() -> None:
        while True:
            await asyncio.sleep(_FLUSH_S)
            flush()

    async def one(claim: VerifyClaimInput, slot: list[Any]) -> None:
        try:
            started = await start_claim(temporal, claim, task_queue=task_queue)
        except Exception as exc:  # nothing started: the offset stays before this line
            tally.failed += 1
            emit(
                {
                    "event": "failed",
                    "line": claim.line,
                    "task_id": claim.task_id,
                    "message": f"could not start its VerifyClaim: {_brief(exc)}",
                }
            )
            slots.release()
            return
        commits.done(slot)
        tally.started += 1
        tally.existing += started.existing
        try:
            receipt = await wait_result(started.handle)
        except Exception as exc:
            tally.failed += 1
            emit(
                {
                    "event": "failed",
                    "line": claim.line,
                    "task_id": claim.task_id,
                    "workflow_id": started.workflow_id,
                    "message": _brief(exc),
                }
            )
            return
        finally:
            slots.release()
        conflict = other_claim(claim, receipt)
        tally.settled += 1
        ok = conflict is None and receipt.verdict in ("verified", "reconciled")
        tally.verified += ok
        tally.not_verified += not ok
        event: Event = {
            "event": "settled",
            "line": claim.line,
            "task_id": claim.task_id,
            "attempt": claim.attempt,
            "workflow_id": started.workflow_id,
            "existing": started.existing,
            "verdict": receipt.verdict,
            "receipt": receipt.model_dump(mode="json", by_alias=True, exclude_none=True),
        }
        if conflict is not None:
            event["conflict"] = conflict
        emit(event)

    ticker = asyncio.create_task(flusher()) if state is not None else None
    tail.busy = lambda: bool(running)
    try:
        async for item in tail.lines():
            if isinstance(item, Notice):
                emit({"event": "notice", "message": item.message})
                continue
            tally.lines += 1
            slot = commits.add(item.end)
            claim = _parse(item)
            if not isinstance(claim, VerifyClaimInput):
                if claim is not None:
                    tally.invalid += 1
                    emit({"event": "invalid", "line": claim.line, "message": claim.reason})
                commits.done(slot)
                continue
            await slots.acquire()
            task = asyncio.create_task(one(claim, slot))
            running.add(task)
            task.add_done_callback(running.discard)
        if running:
            await asyncio.gather(*running)
    finally:
        if ticker is not None:
            ticker.cancel()
        flush()
    return tally


def _parse(item: Line) -> VerifyClaimInput | BadClaim | None:
    if item.data is None:
        return BadClaim(line=item.number, reason=item.problem or "the line could not be read")
    return parse_claim(item.number, item.data)


def _brief(exc: BaseException) -> str:
    """The error and its root cause (Temporal wraps the activity's own message twice)."""
    root: BaseException = exc
    seen = 0
    while root.__cause__ is not None and seen < 10:
        root, seen = root.__cause__, seen + 1
    text = " ".join(str(exc).split()) or type(exc).__name__
    if root is not exc and str(root):
        text += f": {' '.join(str(root).split())}"
    return text[:500]
