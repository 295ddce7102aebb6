"""The outcome ledger (GOV-2): receipts are appended, never updated or deleted."""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import AsyncGenerator, Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import orjson
from pydantic import BaseModel, Field, ValidationError

from landed.receipts.model import Receipt, attempt_of

if TYPE_CHECKING:
    from landed.ledger.chain import ChainRow, SignedHead

__all__ = [
    "DEFAULT_LEDGER_PATH",
    "LEDGER_URL_ENV",
    "Claim",
    "Ledger",
    "LedgerConflict",
    "LedgerError",
    "LedgerEvent",
    "LedgerNotFound",
    "LedgerRow",
    "LoopRow",
    "UntrustedRow",
    "canonical_json",
    "checked_body",
    "stage_of",
]

DEFAULT_LEDGER_PATH = Path(".landed") / "ledger.db"
LEDGER_URL_ENV = "LANDED_LEDGER_URL"


class LedgerError(Exception):
    """The ledger could not be opened, read or written; the message names the fix."""


class UntrustedRow(LedgerError):
    """The row a read found lies past a break in the hash chain (or is foreign): the chain no
    longer proves it is what landed appended, so it is not handed on as a settled receipt.
    Retrying cannot help; `landed ledger verify` names the break."""

    def __init__(self, task_id: str, sequence: int) -> None:
        self.task_id = task_id
        self.sequence = sequence
        super().__init__(
            f"the ledger's latest row for task {task_id!r} (sequence {sequence}) lies past a "
            "break in the hash chain: it may have been changed after it settled, so it is not "
            "trusted; run `landed ledger verify --trust RUNNER_HEAD_KEY.pub` and see the "
            "runbook's ledger-tampered entry"
        )


class LedgerNotFound(LedgerError):
    """A read-only open found no ledger at the given place."""


class LedgerConflict(LedgerError):
    """A receipt for this (task_id, attempt) is already stored with different content.

    Retrying cannot help: the ledger never changes a stored receipt. Settle the new content
    as a new attempt, or find out why the same attempt was settled twice with different data.
    Temporal treats it as non-retryable when ``LedgerConflict`` is in the retry policy's
    ``non_retryable_error_types``.
    """

    def __init__(self, task_id: str, attempt: int, stored_sha256: str, new_sha256: str) -> None:
        self.task_id = task_id
        self.attempt = attempt
        self.stored_sha256 = stored_sha256
        self.new_sha256 = new_sha256
        super().__init__(
            f"ledger conflict: task {task_id!r} attempt {attempt} is already settled with "
            f"different content (stored sha256 {stored_sha256[:12]}, new {new_sha256[:12]}); "
            "the ledger is append-only, so settle the change as a new attempt"
        )


@dataclass(frozen=True, slots=True)
class Claim:
    """A workflow run's record that it is about to run an act attempt of a task.

    Temporal forgets a closed run after its retention; a run that closed without settling
    (terminated, failed) leaves only this behind, and a later run of the same task id finds it
    and does not act blind (DOD-10).
    """

    task_id: str
    run_id: str
    attempt: int
    spec_sha256: str
    claimed_at: datetime


def canonical_json(receipt: Receipt) -> bytes:
    """The receipt as stored and exported: DoD field names, no nulls, sorted keys, no spaces."""
    data = receipt.model_dump(mode="json", by_alias=True, exclude_none=True)
    return orjson.dumps(data, option=orjson.OPT_SORT_KEYS)


@dataclass(frozen=True, slots=True)
class LedgerRow:
    """One receipt ready to insert: its canonical body and the indexed columns."""

    task_id: str
    attempt: int
    verdict: str | None
    owner: str | None
    settled_at: datetime | None
    body: bytes
    sha256: str
    #: Which row of the attempt this is: "settle" (the task's verdict), or the lifecycle stage
    #: a later recheck appended ("confirmed", "reversed"). Part of the key: a recheck's row is
    #: a new row beside the settled one, and its retry still appends nothing.
    stage: str = "settle"

    @classmethod
    def of(cls, receipt: Receipt) -> LedgerRow:
        body = canonical_json(receipt)
        attempt = attempt_of(receipt)
        if attempt < 1:
            raise LedgerError(
                f"task {receipt.task_id!r}: attempt {attempt} is not valid; attempts count from 1"
            )
        return cls(
            task_id=receipt.task_id,
            attempt=attempt,
            verdict=receipt.verdict,
            owner=receipt.owner,
            settled_at=receipt.settled_at,
            body=body,
            sha256=hashlib.sha256(body).hexdigest(),
            stage=stage_of(receipt),
        )

    @property
    def key(self) -> tuple[str, int, str]:
        return (self.task_id, self.attempt, self.stage)


@dataclass(frozen=True, slots=True)
class LoopRow:
    """The latest row of one task of a loop, and whether a reader may take it as settled.

    ``receipt`` is None when the stored body is not the receipt landed stored (its hash does
    not match, or it does not parse); such a row is never trusted.
    """

    sequence: int
    task_id: str
    receipt: Receipt | None
    trusted: bool


def stage_of(receipt: Receipt) -> str:
    """The ledger row a receipt is: a recheck's lifecycle row, or the task's settle row."""
    lifecycle = getattr(receipt.landed, "lifecycle", None) if receipt.landed else None
    return lifecycle if lifecycle in ("confirmed", "reversed") else "settle"


def checked_body(body: bytes | str, sequence: int | None, sha256: str | None) -> bytes:
    """A stored body as bytes; one that does not match the sha256 stored beside it is a
    LedgerError naming the row (a reader never shows such a row as settled)."""
    raw = body.encode() if isinstance(body, str) else body
    if sha256 is not None and hashlib.sha256(raw).hexdigest() != sha256:
        # landed writes the hash of the exact body it stores; a mismatch means the row was
        # written or changed by something else (a stale hash, an edited body).
        row = f"row {sequence}" if sequence is not None else "a row"
        raise LedgerError(
            f"{row} of the ledger (landed_receipts.sequence) does not match its body_sha256: "
            "its body was changed, or it was written by something other than landed, after it "
            "settled; copy the ledger aside and inspect that row before trusting the ledger"
        )
    return raw


def parse_body(
    body: bytes | str, sequence: int | None = None, sha256: str | None = None
) -> Receipt:
    """A stored receipt; a row that is not one, or whose body does not match the sha256 stored
    beside it, is a LedgerError naming the row (a reader never shows such a row as settled)."""
    row = f"row {sequence}" if sequence is not None else "a row"
    raw = checked_body(body, sequence, sha256)
    try:
        return Receipt.model_validate(orjson.loads(raw))
    except (orjson.JSONDecodeError, ValidationError) as exc:
        first = str(exc).strip().splitlines()[0][:200]
        raise LedgerError(
            f"{row} of the ledger (landed_receipts.sequence) is not a receipt landed can read "
            f"({type(exc).__name__}: {first}); landed never writes such a row, so the file was "
            "changed by other means: copy the ledger aside and inspect that row"
        ) from exc


class LedgerEvent(BaseModel):
    """An event beside the receipts (landed.ledger.events); ``key`` is its identity: a
    second append of the key stores nothing."""

    key: str = Field(min_length=1, max_length=500)
    kind: str = Field(min_length=1, max_length=100)
    loop: str | None = None
    at: datetime
    body: dict[str, Any] = Field(default_factory=dict)
    sequence: int | None = None

    def stored_body(self) -> str:
        return orjson.dumps(self.body, option=orjson.OPT_SORT_KEYS).decode()


@runtime_checkable
class Ledger(Protocol):
    """An append-only store of settled receipts; the board is a projection of it."""

    @property
    def url(self) -> str:
        """Where the ledger lives, without credentials."""
        ...

    async def append(self, receipt: Receipt) -> bool:
        """Store a receipt; True if new, False if this exact (task_id, attempt) was already
        stored. Raises LedgerConflict if that attempt was stored with different content."""
        ...

    async def append_many(self, receipts: Iterable[Receipt]) -> list[bool]:
        """append() for many receipts at once; results in input order. Every non-conflicting
        receipt is stored; if any conflicted, LedgerConflict (the first) is raised afterwards."""
        ...

    async def get(self, task_id: str) -> list[Receipt]:
        """Every stored attempt of a task, lowest attempt first."""
        ...

    async def latest(self, task_id: str) -> Receipt | None:
        """The highest stored attempt of a task, or None."""
        ...

    async def board(self) -> list[Receipt]:
        """The latest receipt of every task, ordered by task_id."""
        ...

    async def board_rows(self) -> list[tuple[int, Receipt]]:
        """board() with each row's sequence (a read that trusts the chain marks by it)."""
        ...

    def iter_board_rows(self) -> AsyncGenerator[tuple[int, Receipt], None]:
        """board_rows() read in pages, in the same order: memory does not grow with the
        number of tasks."""
        ...

    def iter_board_bodies(self) -> AsyncGenerator[list[tuple[int, bytes]], None]:
        """iter_board_rows() a page at a time, each row (sequence, body) as stored, its body
        already checked against its hash (checked_body), not yet parsed."""
        ...

    async def board_where(
        self,
        *,
        owner: str | None = None,
        loop: str | None = None,
        since: datetime | None = None,
    ) -> list[tuple[int, Receipt]]:
        """board_rows() of the tasks whose latest receipt has this owner, names this loop, and
        settled after ``since`` (each filter only when given; one at least), ordered by
        task_id; read through the loop, owner or settled_at index, so its work grows with the
        rows it finds, not with the ledger."""
        ...

    async def chain_window(self, sequence: int) -> list[ChainRow]:
        """The receipts-chain rows (as iter_chain reads them) just before ``sequence``, of it,
        and just after it: what reads.links_hold checks a single row by."""
        ...

    async def chain_windows(self, sequences: Sequence[int]) -> dict[int, list[ChainRow]]:
        """chain_window() of each sequence, read at once (one round trip on PostgreSQL)."""
        ...

    async def walk_chain(self) -> None:
        """Walk the receipts chain up to its end for the reads that vouch for a row (latest,
        claim, loop_latest), which otherwise walk at most trusted.WALK_BUDGET rows per call:
        a runner does it once in the background when it starts."""
        ...

    async def loop_latest(
        self, loop: str, since: datetime | None = None, limit: int = 100
    ) -> list[LoopRow]:
        """The latest receipt of each task of ``loop`` settled after ``since``: the newest
        ``limit`` of them (at most reads.MAX_LOOP_ROWS), newest first, read through the loop
        index, so its work is bounded by ``limit``, not by the ledger. Each row says whether
        the chain proves it (LoopRow)."""
        ...

    async def loop_after(
        self, loop: str, after: int, since: datetime | None = None, limit: int = 100
    ) -> list[LoopRow]:
        """The settle rows of ``loop``'s tasks appended after sequence ``after`` and settled
        after ``since``: the oldest ``limit`` of them (at most reads.MAX_LOOP_ROWS), in
        sequence order (commit order), read through the loop index from ``since``: its work
        grows with the loop's rows settled after ``since``, not with the ledger. Each row says
        whether the chain proves it (LoopRow).

        The sequence is the cursor because it is commit order on both backends (each append
        draws its sequence under the receipts chain's lock): a row committed after the reader's
        last one always lies past its cursor, whatever its settled_at. ``since`` is a floor on
        settled_at the reader moves forward as it reads, so the index scan starts near the end."""
        ...

    def iter_rows(self) -> AsyncGenerator[tuple[int, Receipt], None]:
        """iter_receipts() with each row's sequence."""
        ...

    async def claim(
        self,
        task_id: str,
        run_id: str,
        attempt: int,
        spec_sha256: str,
        *,
        record: bool = True,
        owner: str | None = None,
        loop: str | None = None,
    ) -> tuple[Receipt | None, Claim | None]:
        """Just before a run schedules act attempt ``attempt``: the task's latest receipt if the
        ledger holds one (nothing is claimed then); else record, durably, that run ``run_id``
        is about to run it (a repeat changes nothing) and return the first claim another run
        made on this task id, or None. Claims are append-only like receipts.

        With ``record=False`` nothing is written: the same answer, for a run that is not about
        to act (it reads first, or will not act at all) but must know of another run's act.
        ``owner`` and ``loop`` are the task's, stored on the claim (what counts a task started
        by owner and loop while it still acts)."""
        ...

    def iter_receipts(self) -> AsyncGenerator[Receipt, None]:
        """Every stored receipt in append order, read in pages (never all at once)."""
        ...

    async def count(self) -> int:
        """How many receipts are stored (every attempt)."""
        ...

    def iter_chain(
        self, chain: str = "receipts", after: int = 0
    ) -> AsyncGenerator[list[ChainRow], None]:
        """Every stored row of ``chain`` (landed.ledger.links.CHAINS) past the order ``after``
        (receipts: sequence) as the chain walk reads it, in append order, a page at a time."""
        ...

    async def chain_heads(self) -> list[SignedHead]:
        """Every row of landed_chain_heads, lowest position first (at most chain.MAX_HEADS)."""
        ...

    async def sign_head(self) -> None:
        """Sign the current chain head now, if this ledger has a signer and unsigned appends."""
        ...

    async def close(self) -> None:
        """Wait for pending appends, then release the connection(s)."""
        ...

    # --- events (landed.ledger.events): a tripwire's trips, append-only, on their own chain ---

    async def append_event(self, event: LedgerEvent) -> bool:
        """Store an event; True if new, False if its key was stored with the same body (a
        retried write). A different body under a stored key raises LedgerError."""
        ...

    async def events(self, loop: str | None = None, limit: int = 100) -> list[LedgerEvent]:
        """The newest ``limit`` events (of ``loop`` if given), newest first; none from a
        ledger of a schema before events."""
        ...

    async def __aenter__(self) -> Ledger: ...

    async def __aexit__(self, *exc: object) -> None: ...


# A flush stores rows with distinct keys in one transaction and returns, per row, True if it
# was inserted or the sha256 of the row already stored under that key.
Flush = Callable[[Sequence[LedgerRow]], Awaitable[list[bool | str]]]


class GroupCommit:
    """Coalesces concurrent appends into one transaction per flush (group commit).

    One durable commit costs a disk flush; concurrent settles share it instead of queueing
    behind one flush each. A lone append is flushed at once, so it waits for nothing.
    """

    def __init__(
        self,
        flush: Flush,
        max_batch: int = 1000,
        row_refused: Callable[[BaseException], bool] = lambda exc: False,
    ) -> None:
        """``row_refused`` tells an error about one row's values (a NUL the column cannot hold)
        from one about the store (locked, full, disconnected): only the first is worth trying
        each row of the batch alone."""
        self._flush = flush
        self._max_batch = max_batch
        self._row_refused = row_refused
        self._pending: list[tuple[LedgerRow, asyncio.Future[bool]]] = []
        self._drainer: asyncio.Task[None] | None = None

    async def submit(self, rows: Sequence[LedgerRow]) -> list[bool]:
        loop = asyncio.get_running_loop()
        futures = [loop.create_future() for _ in rows]
        self._pending.extend(zip(rows, futures, strict=True))
        # One flush at a time; the next batch gathers meanwhile. done() is checked rather than a
        # done-callback, which would run a turn late and could strand rows submitted meanwhile.
        if self._drainer is None or self._drainer.done():
            self._drainer = loop.create_task(self._drain())
        if len(futures) == 1:  # the settle path: one receipt, no gather needed
            return [await futures[0]]
        outcomes = await asyncio.gather(*futures, return_exceptions=True)
        for outcome in outcomes:
            if isinstance(outcome, BaseException):
                raise outcome
        return [bool(o) for o in outcomes]

    async def wait_idle(self) -> None:
        # Shielded: a caller that stops waiting (a close() cancelled by its timeout) must not
        # cancel the flush under way, which would leave the rows queued behind it unwritten.
        while self._drainer is not None and not self._drainer.done():
            await asyncio.shield(asyncio.gather(self._drainer, return_exceptions=True))

    async def _drain(self) -> None:
        while self._pending:
            # One loop turn first: callers woken by the previous flush re-submit and join this
            # batch, so concurrent settles share a commit instead of alternating half-batches.
            await asyncio.sleep(0)
            batch = self._pending[: self._max_batch]
            del self._pending[: self._max_batch]
            try:
                await self._store(batch)
            except Exception as exc:
                if len(batch) == 1 or not self._row_refused(exc):
                    self._fail(batch, exc)
                    continue
                # One row the store refuses (a value its column cannot hold) fails the whole
                # transaction: each row is tried alone, so only that row's settle fails.
                for one in batch:
                    try:
                        await self._store([one])
                    except Exception as alone:
                        self._fail([one], alone)
            except BaseException as exc:
                # The flush itself is going away (cancelled with the event loop): every row
                # still queued is answered too, so no settle waits for a flush that never comes.
                queued, self._pending = self._pending, []
                self._fail([*batch, *queued], exc)
                raise

    @staticmethod
    def _fail(batch: list[tuple[LedgerRow, asyncio.Future[bool]]], exc: BaseException) -> None:
        for _, fut in batch:
            if not fut.done():
                fut.set_exception(_as_ledger_error(exc))

    async def _store(self, batch: list[tuple[LedgerRow, asyncio.Future[bool]]]) -> None:
        # The first row per key is written; later rows with the same key compare against it.
        leaders: dict[tuple[str, int, str], LedgerRow] = {}
        for row, _ in batch:
            leaders.setdefault(row.key, row)
        order = list(leaders.values())
        results = dict(zip((r.key for r in order), await self._flush(order), strict=True))
        for row, fut in batch:
            if fut.done():  # the caller was cancelled; its row may still have been stored
                continue
            leader, result = leaders[row.key], results[row.key]
            if result is True and leader is row:
                fut.set_result(True)
                continue
            stored = leader.sha256 if result is True else str(result)
            if stored == row.sha256:
                fut.set_result(False)
            else:
                fut.set_exception(LedgerConflict(row.task_id, row.attempt, stored, row.sha256))


def _as_ledger_error(exc: BaseException) -> BaseException:
    if isinstance(exc, LedgerError) or not isinstance(exc, Exception):
        return exc
    err = LedgerError(f"ledger write failed: {type(exc).__name__}: {exc}")
    err.__cause__ = exc
    return err
