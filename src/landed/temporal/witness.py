"""The runner's side of the ledger's witness, and the reader's (rules: landed.ledger.witness).

``WitnessSender`` takes each head the runner signed (from whatever thread committed it) and
sends the latest one to the witness workflow, starting it when it is not running. Sending is
best effort and never in a task's way: a settle only hands the head over; a failure is logged,
counted in ``landed_witness_send_failures`` and retried, a refusal logged as an error, and the
witness catches up with the next head. The head signed as the runner stops goes as a signal.
``read_witness`` is one describe of the witness.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from datetime import timedelta
from typing import Any

from temporalio.client import Client, WithStartWorkflowOperation, WorkflowUpdateFailedError
from temporalio.common import WorkflowIDConflictPolicy
from temporalio.runtime import Runtime

from landed.ledger.chain import SignedHead
from landed.ledger.witness import (
    DEFAULT_KEEP,
    WITNESS_HEADS_MEMO,
    WITNESS_SIGNAL,
    WITNESS_UPDATE,
    WITNESS_WORKFLOW,
    WitnessHead,
    WitnessState,
)

__all__ = ["WitnessSender", "read_witness"]

_log = logging.getLogger("landed.witness")
#: One send's bound: the runner's appends never wait for it, this bounds the sender alone.
_SEND_TIMEOUT = timedelta(seconds=10)


class WitnessSender:
    """``offer`` a signed head from any thread; the latest one offered is sent, in order."""

    def __init__(
        self,
        client: Client,
        workflow_id: str,
        task_queue: str,
        public_pem: str,
        *,
        keep: int = DEFAULT_KEEP,
        retry_s: float = 5.0,
    ) -> None:
        self._client, self._id, self._queue = client, workflow_id, task_queue
        self._start = WitnessState(public_pem=public_pem, keep=keep)
        self._retry_s = retry_s
        self._pending: SignedHead | None = None
        self._wake = asyncio.Event()
        self._loop = asyncio.get_running_loop()
        self._stopping = False
        self._task = self._loop.create_task(self._run(), name="landed-witness-sender")
        runtime = client.service_client.config.runtime or Runtime.default()
        self._failures = runtime.metric_meter.create_counter(
            "landed_witness_send_failures",
            "Signed heads the runner could not hand to the ledger's witness (sent or refused).",
        )
        self.sent = 0

    def offer(self, head: SignedHead) -> None:
        """HeadSigner.on_signed: called after the head's transaction committed."""
        with contextlib.suppress(RuntimeError):  # the loop closed: the runner is stopping
            self._loop.call_soon_threadsafe(self._take, head)

    def _take(self, head: SignedHead) -> None:
        if self._pending is None or head.pos >= self._pending.pos:
            self._pending = head
        self._wake.set()

    async def _run(self) -> None:
        # The SDK turns a cancel during an Update into its own error, which a retry would
        # outlive: the loop also ends on this flag.
        while not self._stopping:
            await self._wake.wait()
            self._wake.clear()
            head = self._pending
            if head is None:
                continue
            if await self._send(head) and self._pending is head:
                self._pending = None
            elif self._pending is head and not self._stopping:
                await asyncio.sleep(self._retry_s)
                self._wake.set()

    async def _send(self, head: SignedHead) -> bool:
        """True when the head was delivered or refused (retrying would not change it)."""
        start: WithStartWorkflowOperation[Any, Any] = WithStartWorkflowOperation(
            WITNESS_WORKFLOW,
            self._start,
            id=self._id,
            task_queue=self._queue,
            id_conflict_policy=WorkflowIDConflictPolicy.USE_EXISTING,
        )
        try:
            await self._client.execute_update_with_start_workflow(
                WITNESS_UPDATE,
                WitnessHead.of(head),
                start_workflow_operation=start,
                rpc_timeout=_SEND_TIMEOUT,
            )
        except WorkflowUpdateFailedError as exc:
            _read_start_failure(start)
            self._failures.add(1, {"reason": "refused"})
            _log.error("the ledger's witness %s refused head %d: %s", self._id, head.pos, exc.cause)
            return True
        except BaseException as exc:  # Temporal down or slow: the next head or the retry catches up
            _read_start_failure(start)
            if not isinstance(exc, Exception):
                raise  # cancelled: close() is stopping the sender
            if self._stopping:
                return False  # cancelled by close, which sends the latest head itself
            self._failures.add(1, {"reason": "unsent"})
            _log.warning(
                "sending head %d to the ledger's witness %s failed (retried in %ss): %s",
                head.pos,
                self._id,
                self._retry_s,
                exc,
            )
            return False
        self.sent += 1
        return True

    async def close(self, within: float = 5.0) -> None:
        """Stop; the last head (the one signed at close) goes as a signal, which Temporal
        records at once although no runner worker is left to accept an Update."""
        await asyncio.sleep(0)  # a head offered before close is taken first (FIFO callbacks)
        self._stopping = True
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._task
        head = self._pending
        if head is None:
            return
        try:
            await self._client.start_workflow(
                WITNESS_WORKFLOW,
                self._start,
                id=self._id,
                task_queue=self._queue,
                id_conflict_policy=WorkflowIDConflictPolicy.USE_EXISTING,
                start_signal=WITNESS_SIGNAL,
                start_signal_args=[WitnessHead.of(head)],
                rpc_timeout=timedelta(seconds=within),
            )
        except Exception as exc:  # the runner stops anyway; the next head catches up
            self._failures.add(1, {"reason": "unsent"})
            _log.warning(
                "the last head %d did not reach the witness %s: %s", head.pos, self._id, exc
            )
            return
        self._pending = None
        self.sent += 1


async def read_witness(client: Client, workflow_id: str) -> WitnessState | None:
    """The heads the witness holds (its memo), None before its first head. Temporal's errors
    (no such workflow, unreachable) are the caller's to report."""
    desc = await client.get_workflow_handle(workflow_id).describe()
    state = await desc.memo_value(WITNESS_HEADS_MEMO, None, type_hint=WitnessState)
    return state if isinstance(state, WitnessState) else None


def _read_start_failure(start: WithStartWorkflowOperation[Any, Any]) -> None:
    """The SDK parks a failed start in a future only ``workflow_handle()`` reads; read it,
    or asyncio reports "Future exception was never retrieved" when the sender is collected."""
    parked = getattr(start, "_workflow_handle", None)
    if isinstance(parked, asyncio.Future) and parked.done() and not parked.cancelled():
        parked.exception()
