"""A ledger export counted once per task, by its latest row, as the board shows it.

``landed receipts export`` writes every row of the ledger: a task's settle row, the row its
recheck appended beside it (``confirmed`` or ``reversed``), and each act attempt's. They are one
task; the board shows its latest row (the highest attempt, then the last appended) and the
scorecard counts that one. A row is a ledger row when it carries ``landed.lifecycle`` (the runner
writes one on every row it settles or rechecks); any other line is a claim of its own, counted
as it comes, exactly as before.
"""

from __future__ import annotations

from typing import Any, Final, NamedTuple

from landed.receipts.grading import RawGrade

__all__ = ["LEDGER_STAGES", "Kept", "LatestRows", "ledger_row"]

#: The lifecycles a ledger row is at (``pending`` is a running task's, never stored).
LEDGER_STAGES: Final = frozenset({"verified", "confirmed", "reversed"})


class Kept(NamedTuple):
    """What the scorecard counts of a task's latest row (a ``ScoredView``), and its grade.
    Only these parts are kept, not the whole receipt: an export holds many tasks."""

    attempt: int
    verdict: str | None
    cost: Any
    landed: Any
    graded: RawGrade


def ledger_row(landed: object) -> bool:
    """The row whose ``landed`` extension this is was written by a runner to the ledger."""
    return getattr(landed, "lifecycle", None) in LEDGER_STAGES


class LatestRows:
    """Each task's latest ledger row seen so far, in input order (a ledger export's order is
    the ledger's append order)."""

    __slots__ = ("rows",)

    def __init__(self) -> None:
        self.rows: dict[str, Kept] = {}

    def offer(
        self, task_id: str, verdict: str | None, cost: Any, landed: Any, graded: RawGrade
    ) -> None:
        """A ledger row of ``task_id``: it becomes the task's latest unless the task already has
        one of a later attempt (a row of the same attempt later in the input is later)."""
        attempt = getattr(landed, "attempt", 1)
        attempt = attempt if isinstance(attempt, int) else 1
        rows = self.rows
        kept = rows.get(task_id)
        if kept is None or attempt >= kept.attempt:
            rows[task_id] = Kept(attempt, verdict, cost, landed, graded)

    def merge(self, later: LatestRows) -> None:
        """Take the rows of ``later`` (the rest of the input) as if offered after these."""
        rows = self.rows
        for task_id, kept in later.rows.items():
            mine = rows.get(task_id)
            if mine is None or kept.attempt >= mine.attempt:
                rows[task_id] = kept
