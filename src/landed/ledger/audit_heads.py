"""The walk's signed heads: where each head says one chain stood, and which rows it vouches for.

A head is checked when the walk reaches its position in the chain (or at once, for a resumed
walk that has passed it); its signature is checked once, when it is added. The v2 upgrade's
marker vouches for the positions it re-chained; heads signed before it (no detail) covered
links that no longer exist and are passed over.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, NamedTuple

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from landed.ledger.chain import MIGRATION_KEY_ID, SignedHead
from landed.ledger.links import MIGRATION_V2_KEY_ID, merge_ranges
from landed.ledger.vouch import HeadDetail

if TYPE_CHECKING:
    from landed.ledger.audit_report import ChainReport

__all__ = ["HeadChecks", "HeadsKept"]

Find = Callable[[str, int | None, int | None, str], None]
#: (head, its key's verdict: None untrusted, False forged, True good; sequence it names, link).
Entry = tuple[SignedHead, bool | None, int | None, str]
#: Links of walked rows a resumed walk keeps, to check a head that arrives after them.
MAX_RECENT = 200_000


_VERDICTS: dict[tuple[SignedHead, bytes], bool] = {}


def _signature_ok(head: SignedHead, key: Ed25519PublicKey) -> bool:
    """Once per head and key, not once per chain walked (three walks read the same heads)."""
    raw = key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    found = _VERDICTS.get((head, raw))
    if found is None:
        if len(_VERDICTS) > 100_000:
            _VERDICTS.clear()
        found = _VERDICTS[(head, raw)] = head.signature_ok(key)
    return found


class HeadsKept(NamedTuple):
    """What a resumed walk needs of its heads: those seen, the positions they vouch for, the
    links of rows walked (for a head signed after them), the upgrade's markers, the figures."""

    seen: list[tuple[str, str, int]]
    ranges: list[tuple[int, int]]
    recent: list[tuple[int, int, str]]
    v2_upto: int
    markers: list[dict[str, int]]
    endorsed: list[dict[str, int]]
    signed_heads: int
    last_signed_pos: int
    last_signed_sequence: int
    migrated_upto: int
    rechained: dict[str, int]


class HeadChecks:
    def __init__(
        self,
        chain: str,
        trust: Mapping[str, Ed25519PublicKey] | None,
        find: Find,
        report: ChainReport,
    ) -> None:
        self.chain, self.trust, self._find, self.report = chain, trust, find, report
        self.at: dict[int, list[Entry]] = {}
        self.resumable = False
        #: Heads over walked rows whose links were no longer kept: left unchecked.
        self.unchecked = 0
        self._seen: set[tuple[str, str, int]] = set()
        self._new: list[list[int]] = []
        self._ranges: list[list[int]] = []
        self._starts: list[int] = []
        self._ends: list[int] = []
        self._recent: dict[int, tuple[int, str]] = {}
        self._v2_upto = 0
        self._markers: list[dict[str, int]] = []
        self._endorsed: list[dict[str, int]] = []

    def kept(self) -> HeadsKept | None:
        """The heads' state, or None while a head waits for a row not walked yet."""
        if self.at or self._new:
            return None
        report = self.report
        return HeadsKept(
            sorted(self._seen),
            [(a, b) for a, b in self._ranges],
            [(pos, seq, link) for pos, (seq, link) in sorted(self._recent.items())],
            self._v2_upto,
            list(self._markers),
            list(self._endorsed),
            report.signed_heads,
            report.last_signed_pos,
            report.last_signed_sequence,
            report.migrated_upto,
            dict(report.rechained),
        )

    def take_back(self, kept: HeadsKept) -> None:
        """Go on from ``kept`` (a walk of the same trust, resumed at the place it was kept)."""
        self._seen = set(kept.seen)
        self._ranges = merge_ranges(kept.ranges)
        self._starts = [a for a, _ in self._ranges]
        self._ends = [b for _, b in self._ranges]
        self._recent = {pos: (seq, link) for pos, seq, link in kept.recent[-MAX_RECENT:]}
        self._v2_upto = kept.v2_upto
        self._markers, self._endorsed = list(kept.markers), list(kept.endorsed)
        report = self.report
        report.signed_heads, report.migrated_upto = kept.signed_heads, kept.migrated_upto
        report.last_signed_pos = kept.last_signed_pos
        report.last_signed_sequence = kept.last_signed_sequence
        report.rechained = dict(kept.rechained)

    def vouched(self, pos: int) -> bool:
        i = bisect.bisect_right(self._starts, pos) - 1
        return i >= 0 and pos <= self._ends[i]

    def add(self, heads: Sequence[SignedHead]) -> None:
        fresh = [h for h in heads if (h.key_id, h.signed_at, h.pos) not in self._seen]
        self._seen.update((h.key_id, h.signed_at, h.pos) for h in fresh)
        # The upgrade's markers first: a v1 head below the v2 marker is passed over.
        for head in fresh:
            if head.key_id == MIGRATION_KEY_ID and self.chain == "receipts":
                self.report.migrated_upto = max(self.report.migrated_upto, head.pos)
            elif head.key_id == MIGRATION_V2_KEY_ID:
                migrated = HeadDetail.of(head).migrated
                self.report.rechained = migrated
                self._v2_upto = max(self._v2_upto, migrated.get("receipts", 0))
                self._markers.append(migrated)
        for head in fresh:
            if head.key_id not in (MIGRATION_KEY_ID, MIGRATION_V2_KEY_ID):
                self._add(head)
        # The marker is an unsigned row anyone with the file can write: it vouches for the
        # re-chained rows only once a trusted head repeats what it says.
        for migrated in [m for m in self._markers if m in self._endorsed]:
            self._markers.remove(migrated)
            if migrated.get(self.chain, 0) > 0:
                self._new.append([1, migrated[self.chain]])
        if self._new:
            self._ranges = merge_ranges([*self._ranges, *self._new])
            self._starts = [a for a, _ in self._ranges]
            self._ends = [b for _, b in self._ranges]
            self._new = []

    def _add(self, head: SignedHead) -> None:
        if head.detail is None and head.pos <= self._v2_upto:
            return  # signed over v1 links, re-chained since (the report says so)
        if self.trust is None:
            return
        key = self.trust.get(head.key_id)
        verdict = None if key is None else _signature_ok(head, key)
        detail = HeadDetail.of(head)
        if self.chain == "receipts":
            pos, seq, want = head.pos, head.sequence, head.link
        elif verdict and self.chain in detail.chains:
            (pos, want), seq = detail.chains[self.chain], None
        else:
            return
        if verdict:
            self._new.extend(detail.vouched.get(self.chain, []))
            if detail.migrated and detail.migrated not in self._endorsed:
                self._endorsed.append(detail.migrated)
        if pos <= 0:
            return
        entry: Entry = (head, verdict, seq, want)
        if self.resumable and pos <= self.report.last_pos:
            if pos in self._recent:
                self._check(pos, *self._recent[pos], entry)
            else:  # over a row walked so long ago that its link is no longer kept
                self.unchecked += 1
            return
        self.at.setdefault(pos, []).append(entry)

    def remember(self, pos: int, seq: int, row_link: str) -> None:
        if self.resumable and self.trust is not None:
            self._recent[pos] = (seq, row_link)
            if len(self._recent) > MAX_RECENT:
                for old in sorted(self._recent)[: MAX_RECENT // 2]:
                    del self._recent[old]

    def check_at(self, pos: int, seq: int, row_link: str) -> None:
        for entry in self.at.pop(pos, []):
            self._check(pos, seq, row_link, entry)

    def _check(self, pos: int, seq: int, row_link: str, entry: Entry) -> None:
        head, verdict, want_seq, want = entry
        report = self.report
        where = f"signed head at position {head.pos} (sequence {head.sequence})"
        if self.chain != "receipts":
            where = f"signed head at position {head.pos} ({self.chain} position {pos})"
        if verdict is None:
            self._find(
                "head_untrusted",
                head.sequence,
                head.pos,
                f"{where} is signed by key {head.key_id}, which --trust does not hold",
            )
        elif not verdict:
            self._find(
                "head_forged",
                head.sequence,
                head.pos,
                f"{where}: its signature by key {head.key_id} does not verify: the head "
                "row was written or changed by something other than the runner",
            )
        elif (want_seq is not None and want_seq != seq) or want != row_link:
            self._find(
                "head_mismatch",
                seq if self.chain != "receipts" else head.sequence,
                pos,
                f"{where} does not match the chain: rows at or below sequence "
                f"{head.sequence if self.chain == 'receipts' else seq}, above sequence "
                f"{report.last_signed_sequence}, were rewritten after the runner signed it",
            )
            if report.first_break is None or report.last_signed_sequence + 1 < report.first_break:
                report.first_break = report.last_signed_sequence + 1
        else:
            report.signed_heads += 1
            if pos > report.last_signed_pos:
                report.last_signed_pos, report.last_signed_sequence = pos, seq

    def finish(self, last_pos: int) -> None:
        for pos in sorted(self.at):
            head, verdict, _, _ = self.at[pos][0]
            if not verdict:
                continue
            self._find(
                "deleted",
                head.sequence,
                pos,
                f"signed head at position {head.pos} (sequence {head.sequence}) names "
                f"{self.chain} position {pos}, which has no row there (the chain ends at "
                f"position {last_pos}): rows were deleted",
            )
        self.at.clear()
