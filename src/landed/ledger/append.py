"""The append path both backends share, written once: a receipt becomes a row (LedgerRow), a
row already stored under its (task id, attempt, stage) is answered with the stored body's hash
instead of a second insert, each new row is linked onto the receipts chain, the head signer is
told of every row this ledger wrote and signs on its schedule, and concurrent appends share one
commit (GroupCommit).

A backend supplies only what differs: its SQL, its transaction and its lock, inside which it
calls ``Batch``'s steps in order (see ``landed.ledger.sqlite.write`` and
``landed.ledger.postgres.write``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime
from typing import NamedTuple, Self

from landed.ledger.base import Flush, GroupCommit, LedgerRow
from landed.ledger.chain import ChainHead, HeadSigner, SignedHead, keep_signing, stop_signing
from landed.ledger.links import link_v2
from landed.receipts.model import Receipt

__all__ = ["AppendPath", "Batch", "Key", "Linked"]

#: A row's idempotency key: (task id, attempt, stage).
Key = tuple[str, int, str]


class Linked(NamedTuple):
    """A new row with its place on the receipts chain, ready for the backend's INSERT."""

    row: LedgerRow
    sequence: int
    pos: int
    link: str
    #: The settled time as the link binds it (the backend's text of it).
    at: str | None


class Batch:
    """One flush of unique rows (GroupCommit sends each key once), inside the backend's write
    transaction: which rows are new, their links, the signer's bookkeeping, the answers."""

    def __init__(
        self, rows: Sequence[LedgerRow], stored: Mapping[Key, str], signer: HeadSigner | None
    ) -> None:
        self._rows = rows
        self._stored = stored
        self._signer = signer
        self._signed: SignedHead | None = None
        #: The rows no earlier append stored; only these are linked and inserted.
        self.new = [r for r in rows if r.key not in stored]
        self.linked: list[Linked] = []

    def link(
        self,
        head: ChainHead,
        sequences: Sequence[int],
        time_text: Callable[[datetime | None], str | None],
    ) -> ChainHead:
        """Link the new rows onto ``head`` in order, each binding its drawn sequence; the
        settled time is written as the backend stores it (``time_text``). Returns the new head."""
        for row, sequence in zip(self.new, sequences, strict=True):
            pos = head.pos + 1
            at = time_text(row.settled_at)
            fields = (sequence, row.task_id, row.attempt, row.stage, row.verdict, row.owner, at)
            link = link_v2("receipts", pos, (*fields, row.sha256), head.link)
            head = ChainHead(pos, sequence, link)
            self.linked.append(Linked(row, sequence, pos, link, at))
        return head

    def inserted(self) -> None:
        """The backend's INSERT took every linked row: the signer learns they are its own."""
        if self._signer is not None:
            for linked in self.linked:
                self._signer.wrote("receipts", linked.pos, linked.link)

    @property
    def sign_due(self) -> bool:
        return self._signer is not None and self._signer.due()

    def signing(self, signed: SignedHead | None) -> None:
        """What the backend's signing under the same lock stored (None: the signer refused)."""
        if signed is None and self._signer is not None:
            self._signer.refused()
        self._signed = signed

    def committed(self) -> list[bool | str]:
        """After the commit: the signer counts its head as stored; one answer per row, True
        for a new row, else the stored body's hash (GroupCommit compares it)."""
        if self._signed is not None and self._signer is not None:
            self._signer.committed()
        return [self._stored.get(r.key, True) for r in self._rows]


class AppendPath:
    """What both ledgers do around their flush: append and append_many through one group
    commit, the head-signing ticker started by the first append, and close."""

    def __init__(
        self,
        signer: HeadSigner | None,
        flush: Flush,
        row_refused: Callable[[BaseException], bool],
    ) -> None:
        self._signer = signer
        self._ticker: asyncio.Task[None] | None = None
        self._commit = GroupCommit(flush, row_refused=row_refused)
        self._closed = False

    def _tick(self) -> None:
        if self._signer is not None and self._ticker is None:
            self._ticker = asyncio.get_running_loop().create_task(
                keep_signing(self._signer, self.sign_head)
            )

    async def append(self, receipt: Receipt) -> bool:
        self._tick()
        return (await self._commit.submit([LedgerRow.of(receipt)]))[0]

    async def append_many(self, receipts: Iterable[Receipt]) -> list[bool]:
        self._tick()
        return await self._commit.submit([LedgerRow.of(r) for r in receipts])

    async def sign_head(self) -> None:
        raise NotImplementedError

    async def _release(self) -> None:
        """The backend lets go of its connections (after the last flush and head)."""
        raise NotImplementedError

    async def close(self) -> None:
        # Waited for first, by every close(): one that was cancelled while rows were queued
        # must not make the next return with those rows unwritten.
        await self._commit.wait_idle()
        if self._closed:
            return
        try:
            await stop_signing(self._signer, self._ticker, self.sign_head)
        finally:
            self._closed = True
            await self._release()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()
