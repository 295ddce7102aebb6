"""The governance scorecard (GOV-12): proof rate, hold rate, cost per verified task, revenue."""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Protocol

from pydantic import BaseModel, ConfigDict, Field

from landed.receipts.grading import RawGrade
from landed.receipts.ladder import ProofLevel, Status
from landed.receipts.latest import LatestRows, ledger_row

__all__ = ["ScoreTally", "Scorecard", "fleet_figures", "format_money", "format_rate"]


class _CostView(Protocol):
    @property
    def usd(self) -> float | None: ...


class _LandedView(Protocol):
    @property
    def revenue_usd(self) -> float | None: ...


class ScoredView(Protocol):
    @property
    def verdict(self) -> str | None: ...
    @property
    def cost(self) -> _CostView | None: ...
    @property
    def landed(self) -> _LandedView | None: ...


class Scorecard(BaseModel):
    """The spec's four figures with their counts. A rate whose denominator is zero is None
    (``null`` in JSON, "n/a" in text), never a 0 that reads like a measurement."""

    model_config = ConfigDict(frozen=True)

    done_claimed: int = Field(description="Receipts whose status or verdict claims done.")
    done_proven: int = Field(description="Done claims that meet their bar (P3+, words agree).")
    proof_rate: float | None = Field(description="done_proven / done_claimed.")
    held: int = Field(description="Receipts settled as held at an approval gate.")
    settled: int = Field(description="Every valid receipt scored.")
    hold_rate: float | None = Field(description="held / settled.")
    cost_usd: float | None = Field(description="Sum of cost.usd; None when no receipt logs it.")
    cost_logged: int = Field(description="Receipts that log cost.usd (GOV-8 coverage).")
    cost_per_verified_task: float | None = Field(description="cost_usd / done_proven.")
    verified_revenue_usd: float = Field(
        description="Sum of landed.revenue_usd over receipts graded P4 that meet their bar."
    )
    reversed: int = Field(
        default=0,
        description="Receipts with verdict reversed: a recheck found a verified outcome no "
        "longer holds (each also counts as a done claim not proven).",
    )
    # --- fleet: cost by phase (GOV-8) and harness releases (GOV-10) ---
    verify_cost_usd: float | None = Field(
        default=None,
        description="Sum of landed.cost.verify.usd: the verifier's own cost (probe time at the "
        "operator's rate, metered provider calls); None when no receipt logs it.",
    )
    cost_per_verified_task_by_phase: dict[str, float | None] = Field(
        default_factory=dict,
        description="act and verify dollars per task done at P3 or above; cost_per_verified_task "
        "is their sum.",
    )
    harness_releases: int = Field(
        default=0,
        description="Times a task was released because its harness was unavailable (GOV-10): "
        "counted apart, never as a failure of the task.",
    )


_HELD = Status.HELD
_P4 = ProofLevel.P4


class ScoreTally:
    """Running counts for a stream of graded receipts; ``scorecard()`` reads them out.

    Dollar sums are kept exact (as integers of 2**-82 dollars, with a Fraction for the rare value
    too small for that grid), so tallies of parts of a file merge into exactly the tally of the
    whole, in any order. A ledger export's rows are one task per task id, counted by its latest
    row when the scorecard is read (``landed.receipts.latest``)."""

    __slots__ = (
        "cost",
        "cost_logged",
        "cost_rest",
        "done_claimed",
        "done_proven",
        "harness_releases",
        "held",
        "latest",
        "revenue",
        "revenue_rest",
        "reversed",
        "settled",
        # --- fleet ---
        "verify_cost",
        "verify_logged",
    )

    def __init__(self) -> None:
        self.done_claimed = 0
        self.done_proven = 0
        self.held = 0
        self.settled = 0
        self.cost_logged = 0
        self.cost = 0  # in units of 2**-82 dollars
        self.cost_rest = Fraction(0)
        self.revenue = 0
        self.revenue_rest = Fraction(0)
        self.reversed = 0
        self.verify_cost = Fraction(0)
        self.verify_logged = 0
        self.harness_releases = 0
        self.latest = LatestRows()

    def add(self, view: ScoredView, graded: RawGrade) -> None:
        landed = view.landed
        if landed is not None and ledger_row(landed):
            task_id = getattr(view, "task_id", None)
            if isinstance(task_id, str):
                # Counted when the scorecard is read, if it is still its task's latest row.
                self.latest.offer(task_id, view.verdict, view.cost, landed, graded)
                return
        self._count(view, graded)

    def _count(self, view: ScoredView, graded: RawGrade) -> None:
        self.settled += 1
        if view.verdict == "reversed":
            self.reversed += 1
        if graded.claims_done:
            self.done_claimed += 1
            if graded.done_at_p3:  # "done at P3 or above", a reconciled claim at P3 too
                self.done_proven += 1
        if graded.proven_status is _HELD:
            self.held += 1
        cost = view.cost
        if cost is not None:
            usd = cost.usd
            # A negative or infinite figure is not a cost anything spent: not logged.
            if usd is not None and math.isfinite(usd) and usd >= 0:
                self.cost_logged += 1
                scaled = usd * _SCALE
                if scaled.is_integer():
                    self.cost += int(scaled)
                else:
                    self.cost_rest += Fraction(usd)
        if view.landed is not None:  # without the extension there is nothing to read
            self._fleet(view)
        # Revenue counts only where landed's own grade reached P4, never the agent's word for it,
        # and only on a task that is done: a receipt that makes no done claim meets no bar.
        if graded.proof_level is _P4 and graded.claims_done and graded.meets_bar:
            extension = view.landed
            revenue = extension.revenue_usd if extension is not None else None
            if revenue is not None and math.isfinite(revenue) and revenue >= 0:
                scaled = revenue * _SCALE
                if scaled.is_integer():
                    self.revenue += int(scaled)
                else:
                    self.revenue_rest += Fraction(revenue)

    def _fleet(self, view: ScoredView) -> None:
        """The verify phase's dollars and the harness releases a receipt records (landed's)."""
        verify, releases = fleet_figures(view.landed)
        if verify is not None:
            self.verify_logged += 1
            self.verify_cost += Fraction(verify)
        self.harness_releases += releases

    def merge(self, other: ScoreTally) -> None:
        """Add the counts of ``other`` (a tally of the part of the input after this one's) to
        this one."""
        self._add_counts(other)
        self.latest.merge(other.latest)

    def _add_counts(self, other: ScoreTally) -> None:
        for name in self.__slots__:
            if name != "latest":
                setattr(self, name, getattr(self, name) + getattr(other, name))

    def scorecard(self) -> Scorecard:
        """The figures: every line counted as it came, and each ledger task's latest row."""
        if not self.latest.rows:
            return self._card()
        counted = ScoreTally()
        counted._add_counts(self)
        for kept in self.latest.rows.values():
            counted._count(kept, kept.graded)
        return counted._card()

    def _card(self) -> Scorecard:
        total = _float(Fraction(self.cost, _SCALE_INT) + self.cost_rest)
        revenue = _float(Fraction(self.revenue, _SCALE_INT) + self.revenue_rest)
        verify = round(_float(self.verify_cost), 6) if self.verify_logged else None
        act = round(total, 6) if self.cost_logged else None
        cost = None if act is None and verify is None else round((act or 0.0) + (verify or 0.0), 6)
        return Scorecard(
            done_claimed=self.done_claimed,
            done_proven=self.done_proven,
            proof_rate=_ratio(self.done_proven, self.done_claimed),
            held=self.held,
            settled=self.settled,
            hold_rate=_ratio(self.held, self.settled),
            cost_usd=cost,
            cost_logged=self.cost_logged,
            cost_per_verified_task=(
                round(cost / self.done_proven, 6) if cost is not None and self.done_proven else None
            ),
            verified_revenue_usd=round(revenue, 2),
            reversed=self.reversed,
            verify_cost_usd=verify,
            cost_per_verified_task_by_phase={
                "act": _per(act, self.done_proven),
                "verify": _per(verify, self.done_proven),
            },
            harness_releases=self.harness_releases,
        )


def _per(usd: float | None, tasks: int) -> float | None:
    return round(usd / tasks, 6) if usd is not None and tasks else None


def fleet_figures(landed: object) -> tuple[float | None, int]:
    """A receipt's verify-phase dollars (None: not logged) and its harness releases, read from
    its ``landed`` extension (``landed.cost.verify.usd``, ``landed.harness.releases``)."""
    cost = getattr(landed, "cost", None)
    verify = cost.get("verify") if isinstance(cost, dict) else None
    usd = verify.get("usd") if isinstance(verify, dict) else None
    spent: float | None = None
    if isinstance(usd, int | float) and not isinstance(usd, bool) and math.isfinite(usd):
        spent = float(usd) if usd >= 0 else None
    harness = getattr(landed, "harness", None)
    releases = harness.get("releases") if isinstance(harness, dict) else None
    count = len(releases) if isinstance(releases, list) else 0
    return spent, count


# Multiplying a double by 2**82 is exact (or overflows to inf, which is not whole); when the
# product is whole (any value of magnitude >= 2**-30 with a finite product), its int holds the
# value exactly, and the rare other value goes into a Fraction.
_SCALE_INT = 1 << 82
_SCALE = float(_SCALE_INT)


def _ratio(part: int, whole: int) -> float | None:
    return part / whole if whole else None


def format_rate(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.1%}"


def format_money(value: float | None) -> str:
    return "n/a" if value is None else f"${value:,.2f}"


def _float(exact: Fraction) -> float:
    """The exact sum as a float; one past a float's range (two costs of 1e308) is infinite,
    not a crash of the whole report."""
    try:
        return float(exact)
    except OverflowError:
        return math.inf if exact > 0 else -math.inf
