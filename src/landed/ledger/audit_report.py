"""What a chain walk found: its findings and its figures, per chain and for the whole ledger."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["MAX_FINDINGS", "ChainReport", "Finding"]

#: Findings kept in the report; more are counted, not kept (a wiped ledger is one story).
MAX_FINDINGS = 1000


@dataclass(frozen=True, slots=True)
class Finding:
    """One way the ledger differs from what landed appended; ``sequence`` names the row (for
    claims, its rowid; for events, its sequence) and ``chain`` its table's chain."""

    kind: str
    sequence: int | None
    pos: int | None
    message: str
    chain: str = "receipts"

    def as_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "chain": self.chain,
            "sequence": self.sequence,
            "pos": self.pos,
            "message": self.message,
        }


@dataclass
class ChainReport:
    chain: str = "receipts"
    rows: int = 0
    last_pos: int = 0
    last_sequence: int = 0
    signed_heads: int = 0
    last_signed_pos: int = 0
    last_signed_sequence: int = 0
    migrated_upto: int = 0
    #: Positions the v2 upgrade re-chained, per chain (landed.ledger.links).
    rechained: dict[str, int] = field(default_factory=dict)
    heads_checked: bool = True
    max_unsigned: int | None = None
    foreign_rows: int = 0
    findings: list[Finding] = field(default_factory=list)
    findings_total: int = 0
    #: The order (receipts: sequence) of the first row a finding names: reads distrust every
    #: row from it on. Foreign rows are distrusted one by one.
    first_break: int | None = None
    foreign: set[int] = field(default_factory=set)
    #: The other chains' reports (claims, events), for the whole-ledger report.
    sides: list[ChainReport] = field(default_factory=list)

    @property
    def unsigned_tail(self) -> int:
        return max(self.last_pos - self.last_signed_pos, 0) if self.heads_checked else 0

    @property
    def tampered(self) -> bool:
        return self.findings_total > 0 or any(s.tampered for s in self.sides)

    def trusts(self, order: int) -> bool:
        """Whether a read may show this row (receipts: its sequence) as the chain proves it."""
        broken = self.first_break is not None and order >= self.first_break
        return not broken and order not in self.foreign

    def all_findings(self) -> list[Finding]:
        return [*self.findings, *(f for s in self.sides for f in s.findings)]

    def total(self) -> int:
        return self.findings_total + sum(s.findings_total for s in self.sides)

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
            "rechained": self.rechained,
            "foreign_rows": self.foreign_rows + sum(s.foreign_rows for s in self.sides),
            "chains": {s.chain: {"rows": s.rows, "last_pos": s.last_pos} for s in self.sides},
            "findings_total": self.total(),
            "findings": [f.as_dict() for f in self.all_findings()],
        }
