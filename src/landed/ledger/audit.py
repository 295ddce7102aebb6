"""``landed ledger verify``'s walk: every row's body and link, and every signed head (see chain).

The walk is fed the rows in sequence order, a page at a time, and keeps only the previous link
and the heads: a million rows cost a million hashes, never a million rows of memory.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from landed.ledger.chain import GENESIS, MIGRATION_KEY_ID, ChainRow, SignedHead, link

if TYPE_CHECKING:
    from landed.ledger.base import Ledger

__all__ = ["ChainReport", "ChainRow", "ChainWalk", "Finding", "audit"]

#: Findings kept in the report; more are counted, not kept (a wiped ledger is one story).
MAX_FINDINGS = 1000


@dataclass(frozen=True, slots=True)
class Finding:
    """One way the ledger differs from what landed appended; ``sequence`` names the row."""

    kind: str
    sequence: int | None
    pos: int | None
    message: str

    def as_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "sequence": self.sequence,
            "pos": self.pos,
            "message": self.message,
        }


@dataclass
class ChainReport:
    rows: int = 0
    last_pos: int = 0
    last_sequence: int = 0
    signed_heads: int = 0
    last_signed_pos: int = 0
    last_signed_sequence: int = 0
    migrated_upto: int = 0
    heads_checked: bool = True
    max_unsigned: int | None = None
    findings: list[Finding] = field(default_factory=list)
    findings_total: int = 0

    @property
    def unsigned_tail(self) -> int:
        return max(self.last_pos - self.last_signed_pos, 0) if self.heads_checked else 0

    @property
    def tampered(self) -> bool:
        return self.findings_total > 0

    def as_dict(self) -> dict[str, Any]:
        return {
            "tampered": self.tampered,
            "rows": self.rows,
            "last_pos": self.last_pos,
            "last_sequence": self.last_sequence,
            "heads_checked": self.heads_checked,
            "signed_heads": self.signed_heads,
            "last_signed_pos": self.last_signed_pos,
            "last_signed_sequence": self.last_signed_sequence,
            "unsigned_tail": self.unsigned_tail,
            "migrated_upto": self.migrated_upto,
            "findings_total": self.findings_total,
            "findings": [f.as_dict() for f in self.findings],
        }


class ChainWalk:
    """Feed it every row in sequence order, then ``finish()``.

    ``trust`` maps key ids to the runner head keys a reader trusts; None checks the links alone
    (then nothing stops a table owner who recomputes the whole chain, and the report says so).
    """

    def __init__(
        self,
        heads: Sequence[SignedHead],
        trust: Mapping[str, Ed25519PublicKey] | None,
        max_unsigned: int | None = None,
    ) -> None:
        self.report = ChainReport(heads_checked=trust is not None, max_unsigned=max_unsigned)
        self._trust = trust
        self._heads: dict[int, list[SignedHead]] = {}
        for head in heads:
            if head.key_id == MIGRATION_KEY_ID:
                self.report.migrated_upto = max(self.report.migrated_upto, head.pos)
            elif trust is not None:
                self._heads.setdefault(head.pos, []).append(head)
        self._expect = 1
        self._prev = GENESIS
        self._prev_seq = 0

    def _find(self, kind: str, sequence: int | None, pos: int | None, message: str) -> None:
        self.report.findings_total += 1
        if len(self.report.findings) < MAX_FINDINGS:
            self.report.findings.append(Finding(kind, sequence, pos, message))

    def feed(self, rows: Sequence[ChainRow]) -> None:
        if not rows:
            return
        report, heads = self.report, self._heads
        report.rows += len(rows)
        report.last_sequence = rows[-1][0]  # rows may be plain tuples (see ChainRow)
        # The hot loop: an intact row in its place costs one link() and a few compares;
        # anything else takes the slow path, which names what is wrong.
        expect, prev, prev_seq = self._expect, self._prev, self._prev_seq
        for row in rows:
            seq, pos, row_link, sha, now = row
            if (
                pos == expect
                and now == sha
                and link(pos, seq, sha, prev) == row_link
                and pos not in heads
            ):
                prev, expect, prev_seq = row_link, pos + 1, seq
                continue
            self._expect, self._prev, self._prev_seq = expect, prev, prev_seq
            self._slow(ChainRow(*row))
            expect, prev, prev_seq = self._expect, self._prev, self._prev_seq
        self._expect, self._prev, self._prev_seq = expect, prev, prev_seq
        if expect - 1 > report.last_pos:
            report.last_pos = expect - 1

    def _slow(self, row: ChainRow) -> None:
        seq, pos, heads = row.sequence, row.pos, self._heads
        if row.body_hash != row.body_sha256:
            self._find(
                "body_edited",
                seq,
                pos,
                f"sequence {seq}: its body does not match its body_sha256: the receipt was "
                "edited after it settled",
            )
        # SQLite stores whatever type it is given: a position that is no integer is no link.
        if not isinstance(pos, int) or not isinstance(row.link, str):
            self._find(
                "unchained",
                seq,
                None,
                f"sequence {seq} has no chain link (or one landed never writes): it was "
                "inserted by something other than landed",
            )
            return
        self._place(row, pos)
        if pos in heads:
            self._check_heads(row, heads.pop(pos))

    def _place(self, row: ChainRow, pos: int) -> None:
        seq, expect = row.sequence, self._expect
        if pos > expect:
            missing = f"position {expect}" if pos == expect + 1 else f"positions {expect}-{pos - 1}"
            self._find(
                "deleted",
                seq,
                pos,
                f"{missing} missing between sequence {self._prev_seq} and sequence {seq}: "
                "receipt(s) were deleted (or this row was moved here from later in the chain)",
            )
        elif pos < expect:
            self._find(
                "inserted_or_reordered",
                seq,
                pos,
                f"sequence {seq} holds chain position {pos}, but position {expect} was due: a "
                "receipt was inserted here, or rows were reordered",
            )
            return  # the chain goes on from the row that was in place
        elif link(pos, seq, row.body_sha256, self._prev) != row.link:
            self._find(
                "link_broken",
                seq,
                pos,
                f"sequence {seq} (position {pos}): its chain link does not follow from the row "
                "before it: its sequence or body_sha256 was changed, or the row before it was "
                "replaced",
            )
        self._prev = row.link or GENESIS
        self._prev_seq = seq
        self._expect = pos + 1
        self.report.last_pos = max(self.report.last_pos, pos)

    def _check_heads(self, row: ChainRow, heads: list[SignedHead]) -> None:
        assert self._trust is not None  # heads are only kept when there is trust
        report = self.report
        for head in heads:
            key = self._trust.get(head.key_id)
            where = f"signed head at position {head.pos} (sequence {head.sequence})"
            if key is None:
                self._find(
                    "head_untrusted",
                    head.sequence,
                    head.pos,
                    f"{where} is signed by key {head.key_id}, which --trust does not hold",
                )
            elif not head.signature_ok(key):
                self._find(
                    "head_forged",
                    head.sequence,
                    head.pos,
                    f"{where}: its signature by key {head.key_id} does not verify: the head "
                    "row was written or changed by something other than the runner",
                )
            elif head.sequence != row.sequence or head.link != row.link:
                self._find(
                    "head_mismatch",
                    head.sequence,
                    head.pos,
                    f"{where} does not match the chain: rows at or below sequence "
                    f"{head.sequence}, above sequence {report.last_signed_sequence}, were "
                    "rewritten after the runner signed it",
                )
            else:
                report.signed_heads += 1
                if head.pos > report.last_signed_pos:
                    report.last_signed_pos, report.last_signed_sequence = head.pos, head.sequence

    def finish(self) -> ChainReport:
        report = self.report
        for pos in sorted(self._heads):
            head = self._heads[pos][0]
            self._find(
                "deleted",
                head.sequence,
                pos,
                f"signed head at position {pos} (sequence {head.sequence}) has no row there "
                f"(the chain ends at position {report.last_pos}): receipts were deleted",
            )
        self._heads.clear()
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


async def audit(
    ledger: Ledger,
    trust: Mapping[str, Ed25519PublicKey] | None,
    max_unsigned: int | None = None,
) -> ChainReport:
    """Walk an open ledger's whole chain (what `landed ledger verify` reports)."""
    walk = ChainWalk(await ledger.chain_heads(), trust, max_unsigned)
    async with contextlib.aclosing(ledger.iter_chain()) as pages:
        async for page in pages:
            walk.feed(page)
    return walk.finish()
