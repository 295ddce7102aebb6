"""Reading the ledger incrementally: a cursor over the append-only rows, and a watch on gaps.

Each read asks only for rows past the last sequence read, so a scrape costs what was appended
since the last one, never the size of the ledger. PostgreSQL can commit sequence numbers out of
order (two writers), so a number skipped below the cursor is watched for a while: a row that
commits late under it is still counted once.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta

from pydantic import BaseModel, ConfigDict, model_validator

from landed.ledger.scan import START, LedgerScan
from landed.telemetry.aggregate import Board

__all__ = ["Reader", "ReaderState"]

PAGE = 2000
#: How long a skipped sequence number is asked for again (a conflict or rollback never fills it).
GAP_SECONDS = 120.0
MAX_GAPS = 1000
#: How far below the events cursor each read starts again (see Reader._events).
EVENT_MARGIN = 100


class ReaderState(BaseModel):
    """The cursors as a saved exporter state holds them; a gap by its age, not a clock's."""

    model_config = ConfigDict(extra="forbid", strict=True)

    cursor: int
    gaps: list[tuple[int, float]]
    claim_cursor: tuple[str, str, str, int]
    event_cursor: int

    @model_validator(mode="after")
    def _in_order(self) -> ReaderState:
        if min(self.cursor, self.event_cursor, self.claim_cursor[3]) < 0:
            raise ValueError("a saved cursor is negative")
        if len(self.gaps) > MAX_GAPS or any(not 0 < s < self.cursor for s, _ in self.gaps):
            raise ValueError("the saved gaps are not below the saved cursor")
        return self


class Reader:
    """Feeds ``board`` from ``scan``; ``read`` returns how many rows and claims it read."""

    def __init__(self, scan: LedgerScan, board: Board, claim_lag: float) -> None:
        self.scan = scan
        self.board = board
        self.cursor = 0
        self.gaps: dict[int, float] = {}
        self.claim_cursor = START
        self.event_cursor = 0
        self._claim_lag = timedelta(seconds=claim_lag)

    def state(self) -> ReaderState:
        now = time.monotonic()
        return ReaderState(
            cursor=self.cursor,
            gaps=[(seq, now - seen) for seq, seen in sorted(self.gaps.items())],
            claim_cursor=self.claim_cursor,
            event_cursor=self.event_cursor,
        )

    def restore(self, state: ReaderState) -> None:
        """Read on from saved cursors (the board holding what they counted is set apart)."""
        now = time.monotonic()
        self.cursor, self.event_cursor = state.cursor, state.event_cursor
        self.claim_cursor = state.claim_cursor
        self.gaps = {seq: now - max(0.0, age) for seq, age in state.gaps}

    async def read(self, max_pages: int | None = None) -> int:
        """Read new rows and claims, up to ``max_pages`` pages of each (None: until caught up).
        A LedgerError leaves the cursors where the last complete page put them."""
        done = 0
        pages = 0
        while max_pages is None or pages < max_pages:
            pages += 1
            got = await self._rows_page()
            done += got
            if got < PAGE:
                break
        pages = 0
        while max_pages is None or pages < max_pages:
            pages += 1
            got = await self._claims_page()
            done += got
            if got < PAGE:
                break
        done += await self._events()
        return done

    async def _events(self) -> int:
        """Trip events, few (one per trip): read from a margin below the cursor, so one that
        committed late under a higher sequence (PostgreSQL, two runners) is still read; the
        board counts each event key once."""
        fresh = 0
        while True:
            events = await self.scan.events(max(0, self.event_cursor - EVENT_MARGIN), PAGE)
            for sequence, key, kind, loop, body in events:
                fresh += int(sequence > self.event_cursor)
                self.event_cursor = max(self.event_cursor, sequence)
                self.board.tripped.add_event(key, kind, loop, body)
            if len(events) < PAGE:
                return fresh

    async def _rows_page(self) -> int:
        now = time.monotonic()
        for seq, seen in list(self.gaps.items()):
            if now - seen > GAP_SECONDS:
                del self.gaps[seq]
        rows = await self.scan.rows(self.cursor, sorted(self.gaps), PAGE)
        fresh = 0
        for sequence, body, sha in rows:
            if sequence in self.gaps:
                del self.gaps[sequence]
            elif sequence <= self.cursor:
                continue  # already counted (a gap row read twice cannot happen; be safe)
            else:
                fresh += 1
                for missing in range(self.cursor + 1, min(sequence, self.cursor + MAX_GAPS + 1)):
                    self.gaps[missing] = now
                self.cursor = sequence
            self.board.add_row(sequence, body, sha)
        while len(self.gaps) > MAX_GAPS:
            del self.gaps[min(self.gaps)]
        return fresh

    async def _claims_page(self) -> int:
        # A claim is read once it is claim_lag old (PostgreSQL can commit a claim below one
        # already read). It names its task's owner and loop itself; a claim stored before it
        # did takes them from its receipt, if the task settled by then.
        before = datetime.now(UTC) - self._claim_lag
        claims = await self.scan.claims(self.claim_cursor, before, PAGE)
        for cursor, owner, loop, body in claims:
            self.board.add_claim(owner, loop, body)
            self.claim_cursor = cursor
        return len(claims)
