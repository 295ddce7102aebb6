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
from landed.receipts.model import Receipt
from landed.receipts.plain import DONE_VERDICTS
from landed.task.claim_contracts import ClaimContracts
from landed.task.claims_in import BadClaim, VerifyClaimInput, parse_claim, pin_claim
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
    contracts: ClaimContracts | None = None,
) -> Tally:
    """Reconcile every line ``tail`` gives; ``emit`` receives each event as it happens.
    ``contracts`` (``--contracts``): each claim by outcome class is checked against them and
    pinned to them before it starts."""
    run = _Run(temporal, task_queue, concurrency, emit, state)
    run.contracts = contracts
    ticker = asyncio.create_task(run.flusher()) if state is not None else None
    tail.busy = lambda: bool(run.running)
    try:
        async for item in tail.lines():
            await run.take(item)
        if run.running:
            await asyncio.gather(*run.running)
    finally:
        if ticker is not None:
            ticker.cancel()
        run.flush()
    return run.tally


class _Run:
    """One reconcile: its tally, the offsets to commit, the claims in flight."""

    def __init__(
        self,
        temporal: TemporalClient,
        task_queue: str,
        concurrency: int,
        emit: Callable[[Event], None],
        state: Path | None,
    ) -> None:
        self.temporal, self.task_queue, self.emit, self.state = temporal, task_queue, emit, state
        self.tally = Tally()
        self.commits = Committer()
        self.slots = asyncio.Semaphore(concurrency)
        self.running: set[asyncio.Task[None]] = set()
        self.saved: Offset | None = None
        self.contracts: ClaimContracts | None = None

    def flush(self) -> None:
        committed = self.commits.committed
        if self.state is not None and committed is not None and committed != self.saved:
            save_offset(self.state, committed)
            self.saved = committed

    async def flusher(self) -> None:
        while True:
            await asyncio.sleep(_FLUSH_S)
            self.flush()

    async def take(self, item: Line | Notice) -> None:
        """One item of the stream: a notice said, a bad line reported, a claim started."""
        if isinstance(item, Notice):
            self.emit({"event": "notice", "message": item.message})
            return
        self.tally.lines += 1
        slot = self.commits.add(item.end)
        claim = _parse(item)
        if isinstance(claim, VerifyClaimInput) and self.contracts is not None:
            claim = pin_claim(claim, self.contracts)
        if not isinstance(claim, VerifyClaimInput):
            if claim is not None:
                self.tally.invalid += 1
                self.emit({"event": "invalid", "line": claim.line, "message": claim.reason})
            self.commits.done(slot)
            return
        await self.slots.acquire()
        task = asyncio.create_task(self._one(claim, slot))
        self.running.add(task)
        task.add_done_callback(self.running.discard)

    async def _one(self, claim: VerifyClaimInput, slot: list[Any]) -> None:
        failed: Event = {"event": "failed", "line": claim.line, "task_id": claim.task_id}
        try:
            try:
                started = await start_claim(self.temporal, claim, task_queue=self.task_queue)
            except Exception as exc:  # nothing started: the offset stays before this line
                self.tally.failed += 1
                message = f"could not start its VerifyClaim: {_brief(exc)}"
                self.emit({**failed, "message": message})
                return
            self.commits.done(slot)
            self.tally.started += 1
            self.tally.existing += started.existing
            try:
                receipt = await wait_result(started.handle)
            except Exception as exc:
                self.tally.failed += 1
                self.emit({**failed, "workflow_id": started.workflow_id, "message": _brief(exc)})
                return
        finally:
            self.slots.release()
        self._settled(claim, started.workflow_id, started.existing, receipt)

    def _settled(
        self, claim: VerifyClaimInput, workflow_id: str, existing: bool, receipt: Receipt
    ) -> None:
        conflict = other_claim(claim, receipt)
        self.tally.settled += 1
        ok = conflict is None and receipt.verdict in DONE_VERDICTS
        self.tally.verified += ok
        self.tally.not_verified += not ok
        event: Event = {
            "event": "settled",
            "line": claim.line,
            "task_id": claim.task_id,
            "attempt": claim.attempt,
            "workflow_id": workflow_id,
            "existing": existing,
            "verdict": receipt.verdict,
            "done": ok,
            "receipt": receipt.model_dump(mode="json", by_alias=True, exclude_none=True),
        }
        if conflict is not None:
            event["conflict"] = conflict
        self.emit(event)


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
