"""The chain walk: every row's body and link, every signed head, every row's voucher.

``landed ledger verify`` walks every chain of the ledger (receipts, claims, events: see
landed.ledger.links); `board`, `receipts export`, the exporter and the runner's lookups walk
the receipts chain too, and keep a walk's state to resume it where they stopped. The walk is
fed rows in append order, a page at a time, and keeps only the previous link, the heads ahead
and the rows no head vouches for yet: a million rows cost a million hashes, never a million
rows of memory.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, NamedTuple, cast

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from landed.ledger.audit_heads import HeadChecks, HeadsKept
from landed.ledger.audit_report import MAX_FINDINGS, ChainReport, Finding
from landed.ledger.chain import GENESIS, ChainRow, SignedHead
from landed.ledger.links import CHAINS, FIELDS, link_v2, parse_time

if TYPE_CHECKING:
    from landed.ledger.base import Ledger

__all__ = ["ChainReport", "ChainRow", "ChainWalk", "Finding", "WalkPosition", "audit"]

#: Findings about heads or vouching, not about the rows' links: the rows after them still chain.
_NO_BREAK = frozenset({"foreign", "unsigned_tail", "head_untrusted", "head_forged"})
#: Rows awaiting a voucher that a walk keeps; beyond, the oldest are judged at once.
MAX_PENDING = 100_000


class WalkPosition(NamedTuple):
    """The row a walk expects next, the link before it, and the rows it has walked."""

    expect: int
    prev: str
    prev_seq: int
    rows: int
    last_pos: int
    last_sequence: int
    #: Rows awaiting a voucher: (position, sequence, appended at).
    pending: list[tuple[int, int, str | None]]
    heads: HeadsKept


class ChainWalk:
    """Feed it one chain's rows in append order, then ``finish()`` (or, resumed, ``check()``).

    ``trust`` maps key ids to the runner head keys a reader trusts; None checks the links alone
    (then nothing stops a table owner who recomputes the whole chain, and the report says so).
    With ``foreign_after`` (seconds), a row no trusted head vouches for that long is foreign.
    """

    def __init__(
        self,
        heads: Sequence[SignedHead],
        trust: Mapping[str, Ed25519PublicKey] | None,
        max_unsigned: int | None = None,
        *,
        chain: str = "receipts",
        foreign_after: float | None = None,
        resume: bool = False,
    ) -> None:
        self.chain = chain
        self.report = ChainReport(
            chain=chain, heads_checked=trust is not None, max_unsigned=max_unsigned
        )
        self.foreign_after = foreign_after
        self.heads = HeadChecks(chain, trust, self._find, self.report)
        # A walk a reader keeps and feeds again (the exporter, the runner's lookups) keeps the
        # links it passed, to check a head signed after it passed them.
        self.heads.resumable = resume
        self._expect = 1
        self._prev = GENESIS
        self._prev_seq = 0
        self._pending: dict[int, tuple[int, object]] = {}
        self.add_heads(heads)

    def position(self) -> WalkPosition | None:
        """Where the walk stands, for a reader to resume it (None: not now, a head waits for
        a row not walked yet)."""
        heads = self.heads.kept()
        pending = [(pos, seq, at) for pos, (seq, at) in sorted(self._pending.items())]
        if heads is None or not all(at is None or isinstance(at, str) for _, _, at in pending):
            return None
        report = self.report
        return WalkPosition(
            self._expect,
            self._prev,
            self._prev_seq,
            report.rows,
            report.last_pos,
            report.last_sequence,
            cast(list[tuple[int, int, str | None]], pending),
            heads,
        )

    def resume_at(self, at: WalkPosition) -> None:
        """Go on from a saved position of a walk of the same trust that found nothing."""
        self._expect, self._prev, self._prev_seq = at.expect, at.prev, at.prev_seq
        self.report.rows, self.report.last_pos = at.rows, at.last_pos
        self.report.last_sequence = at.last_sequence
        self._pending = {pos: (seq, when) for pos, seq, when in at.pending}
        self.heads.take_back(at.heads)

    def add_heads(self, heads: Sequence[SignedHead]) -> None:
        """Heads read since the walk began (a resumed walk reads new ones before new rows)."""
        self.heads.add(heads)

    def _find(self, kind: str, sequence: int | None, pos: int | None, message: str) -> None:
        report = self.report
        report.findings_total += 1
        if len(report.findings) < MAX_FINDINGS:
            report.findings.append(Finding(kind, sequence, pos, message, self.chain))
        if sequence is not None and kind not in _NO_BREAK:
            first = report.first_break
            report.first_break = sequence if first is None else min(first, sequence)

    def feed(self, rows: Sequence[ChainRow]) -> None:
        if not rows:
            return
        report, chain, heads = self.report, self.chain, self.heads
        report.rows += len(rows)
        report.last_sequence = rows[-1][0]
        # The hot loop: an intact, vouched row in its place costs one link and a few compares;
        # anything else takes the slow path, which names what is wrong.
        expect, prev = self._expect, self._prev
        vouched = heads.vouched if heads.trust is not None else None
        remember = heads.remember if heads.resumable and heads.trust is not None else None
        for row in rows:
            pos, row_link = row[1], row[2]
            if (
                pos == expect
                and row[3] == row[4]
                and link_v2(chain, pos, row[6:], prev) == row_link
                and pos not in heads.at
            ):
                prev, expect, self._prev_seq = row_link, pos + 1, row[0]
                if vouched is not None and not vouched(pos):
                    self._pending[pos] = (row[0], row[5])
                if remember is not None:
                    remember(pos, row[0], row_link)
                continue
            self._expect, self._prev = expect, prev
            self._slow(row)
            expect, prev = self._expect, self._prev
        self._expect, self._prev = expect, prev
        report.last_pos = max(report.last_pos, expect - 1)

    def _slow(self, row: ChainRow) -> None:
        seq, pos = row[0], row[1]
        if row[3] != row[4]:
            self._find(
                "body_edited",
                seq,
                pos,
                f"sequence {seq}: its body does not match its body_sha256: the receipt was "
                "edited after it settled",
            )
        # SQLite stores whatever type it is given: a position that is no integer is no link.
        if not isinstance(pos, int) or not isinstance(row[2], str):
            self._find(
                "unchained",
                seq,
                None,
                f"{self._what(seq)} has no chain link (or one landed never writes): it was "
                "inserted by something other than landed",
            )
            return
        placed = self._place(row, pos)
        if placed and self.heads.trust is not None and not self.heads.vouched(pos):
            self._pending[pos] = (seq, row[5])
        self.heads.remember(pos, seq, row[2])
        self.heads.check_at(pos, seq, row[2])

    def _what(self, seq: int) -> str:
        return f"sequence {seq}" if self.chain != "claims" else f"claim (rowid {seq})"

    def _place(self, row: ChainRow, pos: int) -> bool:
        seq, expect = row[0], self._expect
        if pos > expect:
            missing = f"position {expect}" if pos == expect + 1 else f"positions {expect}-{pos - 1}"
            self._find(
                "deleted",
                seq,
                pos,
                f"{self.chain}: {missing} missing between sequence {self._prev_seq} and sequence "
                f"{seq}: row(s) were deleted (or this row was moved here from later in the chain)",
            )
        elif pos < expect:
            self._find(
                "inserted_or_reordered",
                seq,
                pos,
                f"{self._what(seq)} holds {self.chain} chain position {pos}, but position "
                f"{expect} was due: a row was inserted here, or rows were reordered",
            )
            return False  # the chain goes on from the row that was in place
        elif link_v2(self.chain, pos, row[6:], self._prev) != row[2]:
            self._find(
                "link_broken",
                seq,
                pos,
                f"{self._what(seq)} ({self.chain} position {pos}): its chain link does not "
                "follow from its columns and the row before it: one of its columns ("
                f"{', '.join(FIELDS[self.chain])}) was changed, or the row before it was "
                "replaced",
            )
        self._prev = row[2] or GENESIS
        self._prev_seq = seq
        self._expect = pos + 1
        self.report.last_pos = max(self.report.last_pos, pos)
        return True

    def check(self, now: float | None = None) -> ChainReport:
        """Judge the rows still awaiting a voucher (a resumable walk calls this per read)."""
        wall = datetime.now(UTC) if now is None else datetime.fromtimestamp(now, UTC)
        vouched = self.heads.vouched
        for pos in sorted(self._pending):
            seq, at = self._pending[pos]
            if vouched(pos):
                del self._pending[pos]
            elif self.foreign_after is not None and (
                _age(at, wall) >= self.foreign_after or len(self._pending) > MAX_PENDING
            ):
                del self._pending[pos]
                self.report.foreign_rows += 1
                self.report.foreign.add(seq)
                self._find(
                    "foreign",
                    seq,
                    pos,
                    f"{self._what(seq)} ({self.chain} position {pos}) is vouched for by no "
                    "trusted signed head although the runner signs its own rows within "
                    f"{self.foreign_after:g} s: it was written into the ledger by other means",
                )
        return self.report

    def finish(self) -> ChainReport:
        report = self.check()
        self.heads.finish(report.last_pos)
        if report.max_unsigned is not None and report.unsigned_tail > report.max_unsigned:
            self._find(
                "unsigned_tail",
                report.last_sequence,
                report.last_pos,
                f"{report.unsigned_tail} row(s) after the last signed head (position "
                f"{report.last_signed_pos}) are signed by no trusted head, more than "
                f"--max-unsigned {report.max_unsigned}",
            )
        return report


def _age(at: object, now: datetime) -> float:
    """Seconds since a stored time; a time landed never writes (or in the future) is old."""
    when = parse_time(at)
    if when is None or when > now + _SKEW:
        return float("inf")
    return (now - when).total_seconds()


_SKEW = timedelta(seconds=60)


async def audit(
    ledger: Ledger,
    trust: Mapping[str, Ed25519PublicKey] | None,
    max_unsigned: int | None = None,
    foreign_after: float | None = None,
) -> ChainReport:
    """Walk an open ledger's every chain (what `landed ledger verify` reports): the receipts'
    report, with the claims' and events' reports as its ``sides``."""
    heads = await ledger.chain_heads()
    reports = []
    for chain in CHAINS:
        unsigned = max_unsigned if chain == "receipts" else None
        walk = ChainWalk(heads, trust, unsigned, chain=chain, foreign_after=foreign_after)
        async with contextlib.aclosing(ledger.iter_chain(chain)) as pages:
            async for page in pages:
                walk.feed(page)
        reports.append(walk.finish())
    main, *sides = reports
    main.sides = sides
    return main
