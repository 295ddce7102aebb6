"""Bounded label values: what users name (owners, loops) cannot grow Prometheus without end."""

from __future__ import annotations

from landed.receipts.ladder import ProofLevel, Status

__all__ = ["OTHER", "LabelCap", "bounded"]

OTHER = "other"

#: Verdicts and rungs landed writes; anything else a row carries is shown as ``other``.
_LADDER_WORDS = frozenset({s.value for s in Status} | {"reversed", "unknown"})
_LEVELS = frozenset(level.label for level in ProofLevel)
_MAX_TEXT = 120


class LabelCap:
    """The first ``cap`` distinct values keep their name; every later one folds into ``other``.

    The ledger is read in sequence order, so which values keep their name is the same after a
    restart that reads it again: a series never changes its labels between two exporters.
    """

    __slots__ = ("_cap", "_seen", "folds")

    def __init__(self, cap: int) -> None:
        if cap < 1:
            raise ValueError(
                f"the label cap is {cap}; set LANDED_EXPORTER__MAX_LABEL_VALUES to 1 or more"
            )
        self._cap = cap
        self._seen: set[str] = set()
        #: Values counted under "other" (landed_label_folds_total): each time, not each name.
        self.folds = 0

    def fold(self, value: str | None) -> str:
        # "" (no owner, no loop) and "other" itself never use up a place.
        text = (value or "")[:_MAX_TEXT]
        if not text or text == OTHER or text in self._seen:
            return text
        if len(self._seen) < self._cap:
            self._seen.add(text)
            return text
        self.folds += 1
        return OTHER

    def __len__(self) -> int:
        return len(self._seen)

    def names(self) -> list[str]:
        """The values that keep their name, sorted (what a saved exporter state holds)."""
        return sorted(self._seen)

    def restore(self, names: list[str], folds: int) -> None:
        """Take back a saved state; more names than the cap is a state of other settings."""
        if len(set(names)) > self._cap or folds < 0:
            raise ValueError(f"{len(names)} label values saved, more than the cap {self._cap}")
        self._seen = set(names)
        self.folds = folds


def bounded(value: str | None, kind: str) -> str:
    """A verdict, rung or proof level as a label: landed's own words, else ``other``."""
    if not value:
        return ""
    allowed = _LEVELS if kind == "proof_level" else _LADDER_WORDS
    return value if value in allowed else OTHER
