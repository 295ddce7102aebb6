"""The exporter's walk of the ledger's chains: resumed where the last scrape stopped.

Each read takes the signed heads from the last one's position on, then the rows of every chain
appended since, and feeds them to a walk it keeps (landed.ledger.audit): a scrape costs what
was appended since the last one. ``landed_ledger_chain_ok`` is 0 once any walk finds a break,
``landed_ledger_foreign_rows`` counts rows no trusted head vouches for in time (with
LANDED_EXPORTER__HEAD_KEYS; without, the links alone are checked). A read that fails keeps the
last figures (``landed_ledger_up`` says so). After a restart the walks resume from the exporter's
saved state (landed.telemetry.state) when they had found nothing.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector
from pydantic import BaseModel, ConfigDict, model_validator

from landed.ledger.audit import ChainWalk, WalkPosition
from landed.ledger.base import LedgerError
from landed.ledger.links import CHAINS
from landed.ledger.scan import MAX_SCAN_HEADS, LedgerScan

__all__ = ["ChainCollector", "ChainReader", "ChainState"]

log = logging.getLogger("landed.telemetry")

PAGE = 5000


class ChainState(BaseModel):
    """Where each chain's walk stood, as a saved exporter state holds it."""

    model_config = ConfigDict(extra="forbid", strict=True)

    cursors: dict[str, int]
    walks: dict[str, WalkPosition]

    @model_validator(mode="after")
    def _every_chain(self) -> ChainState:
        if set(self.cursors) != set(CHAINS) or set(self.walks) != set(CHAINS):
            raise ValueError(f"a saved chain walk names other chains than {', '.join(CHAINS)}")
        return self


class ChainReader:
    def __init__(
        self,
        scan: LedgerScan,
        trust: Mapping[str, Ed25519PublicKey] | None,
        foreign_after: float,
    ) -> None:
        self.scan = scan
        self.trust = trust
        self._foreign_after = foreign_after if trust is not None else None
        self.walks = self._fresh()
        self._resumed = False
        # -1: a claim without a position (order 0 on PostgreSQL) is read too.
        self.cursors = dict.fromkeys(CHAINS, -1)
        self.head_from = 0
        self.ok: bool | None = None
        self.foreign = 0
        self.error = ""

    def _fresh(self) -> dict[str, ChainWalk]:
        after = self._foreign_after
        return {
            c: ChainWalk([], self.trust, chain=c, foreign_after=after, resume=True) for c in CHAINS
        }

    def state(self) -> ChainState | None:
        """The walks' place, or None when a resumed walk could not give a fresh walk's figures:
        after any finding (a fresh walk finds it again), or while a head waits for a row."""
        if self.ok is not True:
            return None
        walks = {chain: walk.position() for chain, walk in self.walks.items()}
        kept = {chain: at for chain, at in walks.items() if at is not None}
        if len(kept) < len(walks):
            return None
        return ChainState(cursors=dict(self.cursors), walks=kept)

    def restore(self, state: ChainState) -> None:
        """Resume every walk (the state was saved under the same head keys: its settings say).
        Every signed head is read again: one added while the exporter was stopped, over a row
        whose link the state no longer holds, starts every walk over (see read)."""
        for chain, walk in self.walks.items():
            walk.resume_at(state.walks[chain])
        self.cursors, self.head_from = dict(state.cursors), 0
        self._resumed = True

    async def read(self, max_pages: int | None = None) -> None:
        heads = await self.scan.heads(self.head_from)
        for walk in self.walks.values():
            walk.add_heads(heads)
        if self._resumed and any(walk.heads.unchecked for walk in self.walks.values()):
            log.warning(
                "landed exporter: a signed head was added over rows walked before the restart; "
                "walking every chain again from its start to check it"
            )
            self.walks, self.cursors = self._fresh(), dict.fromkeys(CHAINS, -1)
            self.head_from, self._resumed = 0, False  # as a first start: every head again
            heads = await self.scan.heads(0)
            for walk in self.walks.values():
                walk.add_heads(heads)
        # Until every head was read again (a read returns at most MAX_SCAN_HEADS of them).
        self._resumed = self._resumed and len(heads) >= MAX_SCAN_HEADS
        self.head_from = max([self.head_from, *(h.pos for h in heads)])
        for chain, walk in self.walks.items():
            pages = 0
            while max_pages is None or pages < max_pages:
                pages += 1
                rows = await self.scan.chain(chain, self.cursors[chain], PAGE)
                walk.feed(rows)
                if rows:
                    self.cursors[chain] = int(rows[-1][0])
                if len(rows) < PAGE:
                    break
        reports = [walk.check() for walk in self.walks.values()]
        self.ok = all(r.findings_total == 0 for r in reports)
        self.foreign = sum(r.foreign_rows for r in reports)

    async def read_or_flag(self, max_pages: int | None = None) -> None:
        """read(), but a chain that cannot be walked (a ledger from before the v2 links, not
        yet upgraded by its runner) is chain_ok 0 and a log line, not a failed scrape."""
        try:
            await self.read(max_pages)
        except LedgerError as exc:
            if self.ok is not False or str(exc) != self.error:
                log.warning("landed exporter: the ledger's chain could not be walked: %s", exc)
            self.ok, self.error = False, str(exc)
        else:
            self.error = ""

    def key(self) -> tuple[bool | None, int]:
        return (self.ok, self.foreign)


class ChainCollector(Collector):
    def __init__(self, reader: ChainReader) -> None:
        self.reader = reader

    def collect(self) -> Iterator[Metric]:
        yield GaugeMetricFamily(
            "landed_ledger_chain_ok",
            "1 while every chain of the ledger (receipts, claims, events) walks without a "
            "break and every signed head matches; 0 once any does not (or before the first "
            "walk).",
            value=1 if self.reader.ok else 0,
        )
        yield GaugeMetricFamily(
            "landed_ledger_foreign_rows",
            "Rows no trusted runner head vouches for within the foreign-after window: written "
            "into the ledger by other means (needs LANDED_EXPORTER__HEAD_KEYS).",
            value=self.reader.foreign,
        )
