"""Reads that trust the chain: a receipts-chain walk a reader keeps and resumes.

`landed board`, `landed receipts export` and the runner's latest-receipt lookup show a row as
settled only if the chain walked up to it holds: every row from the first break on (an edited
column, a deleted or inserted row) and every foreign row is untrusted. The walk is resumed from
where it stopped, so a reader that asks again pays only for the rows appended since.

A read that runs inside a step with a time limit (the runner's lookups, a tripwire's catch-up)
walks at most WALK_BUDGET rows per call: a walk that has not yet reached the row it must
vouch for raises ChainWalkBehind, and the step's retry resumes the walk where it stopped. A
runner walks the chain once in the background when it starts (Ledger.walk_chain), so its reads
find the walk warm.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Mapping
from typing import TYPE_CHECKING

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from landed.ledger.audit import ChainWalk
from landed.ledger.audit_report import ChainReport
from landed.ledger.base import LedgerError, UntrustedRow

if TYPE_CHECKING:
    from landed.ledger.base import Ledger

__all__ = ["UNTRUSTED_FIELD", "WALK_BUDGET", "ChainWalkBehind", "ReadGuard", "receipts_report"]

#: The field `landed receipts export` adds to a receipt the chain no longer proves.
UNTRUSTED_FIELD = "x-landed-chain"

#: The most receipts-chain rows a bounded read walks per call (a few seconds on a loaded
#: machine): its work has a bound whatever the ledger's size, and its retries resume the walk.
WALK_BUDGET = 200_000


class ChainWalkBehind(LedgerError):
    """The chain walk has not yet reached the row a read must vouch for (the reader started on
    a large ledger); retrying resumes the walk where it stopped."""

    def __init__(self, sequence: int, walked: int) -> None:
        self.sequence = sequence
        self.walked = walked
        super().__init__(
            f"the receipts chain has been walked up to sequence {walked}, not yet to "
            f"{sequence}: the walk stops after {WALK_BUDGET:,} rows per read so that a read "
            "stays within its time limit; retrying resumes it"
        )


class ReadGuard:
    """A resumable walk of one ledger's receipts chain (``after``: the last sequence walked)."""

    def __init__(
        self,
        trust: Mapping[str, Ed25519PublicKey] | None = None,
        foreign_after: float | None = None,
    ) -> None:
        self.walk = ChainWalk([], trust, chain="receipts", foreign_after=foreign_after, resume=True)
        self.trust = trust
        self.after = 0
        #: Whether the last advance reached the chain's end (not stopped by its budget).
        self.complete = False
        self._lock = asyncio.Lock()

    async def advance(
        self, ledger: Ledger, upto: int | None = None, budget: int | None = None
    ) -> ChainReport:
        """Walk the rows appended since the last call (none if ``upto`` was walked already),
        at most about ``budget`` rows (a page more at most) when given."""
        async with self._lock:
            if upto is not None and upto <= self.after:
                return self.walk.report
            if self.trust is not None:
                self.walk.add_heads(await ledger.chain_heads())
            walked, self.complete = 0, True
            async with contextlib.aclosing(ledger.iter_chain("receipts", self.after)) as pages:
                async for page in pages:
                    self.walk.feed(page)
                    self.after = int(page[-1][0])
                    walked += len(page)
                    if budget is not None and walked >= budget:
                        self.complete = False
                        break
            return self.walk.check()

    async def vouch(self, ledger: Ledger, upto: int) -> ChainReport:
        """The walk advanced to ``upto``, within WALK_BUDGET rows (ChainWalkBehind if the
        budget ran out first: the next call resumes)."""
        report = await self.advance(ledger, upto, WALK_BUDGET)
        if upto > self.after and not self.complete:
            raise ChainWalkBehind(upto, self.after)
        return report

    async def walk_to_end(self, ledger: Ledger) -> None:
        """Advance to the chain's end a budget at a time, letting go of the walk between
        budgets: a read waiting for it waits for one budget at most, never the whole chain."""
        while True:
            await self.advance(ledger, budget=WALK_BUDGET)
            if self.complete:
                return
            await asyncio.sleep(0)

    async def require(self, ledger: Ledger, task_id: str, sequence: int) -> None:
        """Refuse a row the chain does not prove (UntrustedRow: retrying cannot help)."""
        report = await self.vouch(ledger, sequence)
        if not report.trusts(sequence) or sequence > self.after:
            raise UntrustedRow(task_id, sequence)


async def receipts_report(
    ledger: Ledger,
    trust: Mapping[str, Ed25519PublicKey] | None,
    foreign_after: float | None,
) -> ChainReport:
    """One whole walk of the receipts chain, for a read that shows rows (board, export)."""
    guard = ReadGuard(trust, foreign_after)
    await guard.advance(ledger)
    report = guard.walk.finish()
    return report
