"""Burn-rate math for landed's SLOs: the recording rules and the multi-window alerts of one SLO.

An SLO's error ratio is recorded over every window an alert or a dashboard reads; an alert fires
when both its long and its short window burn the error budget (1 - objective) faster than its
factor, and the long window holds at least ``min_events`` events, so a quiet fleet does not page
on one task. The windows and factors are the SRE workbook's: 14.4x over 1h and 5m spends 2% of a
30-day budget in an hour (page), 6x over 6h and 30m spends 5% in six hours (page), 1x over 3d
and 6h spends it exactly on time (ticket).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

WINDOWS = ("5m", "30m", "1h", "2h", "6h", "1d", "3d")


@dataclass(frozen=True)
class Burn:
    """One multi-window alert: its name suffix, factor, long and short window, severity."""

    suffix: str
    factor: float
    long: str
    short: str
    severity: str


BURNS = (
    Burn("Burn1h", 14.4, "1h", "5m", "page"),
    Burn("Burn6h", 6.0, "6h", "30m", "page"),
    Burn("Burn3d", 1.0, "3d", "6h", "ticket"),
)


@dataclass(frozen=True)
class Slo:
    """One SLO as slos.yaml states it, for all owners or (``owner``) one owner's override."""

    name: str
    alert: str
    summary: str
    objective: float
    window: str
    by: str | None
    total: str
    good: str
    min_events: int
    owner: str | None = None
    others: tuple[str, ...] = ()

    @property
    def budget(self) -> float:
        return round(1 - self.objective, 10)

    def selector(self) -> str:
        """The recorded series this SLO's alerts read: its own owner, or all but the overrides."""
        parts = [f'slo="{self.name}"']
        if self.owner is not None:
            parts.append(f'owner="{self.owner}"')
        elif self.others:
            parts.append(f'owner!~"{"|".join(self.others)}"')
        return "{" + ", ".join(parts) + "}"


def _num(value: float) -> str:
    return f"{round(value, 10):g}"


def recording_rules(slo: Slo, windows: tuple[str, ...]) -> list[dict[str, Any]]:
    """The error ratio over each window, and the events over each alert's long window."""
    by = f"sum by ({slo.by})" if slo.by else "sum"
    labels = {"slo": slo.name}
    rules: list[dict[str, Any]] = []
    for window in windows:
        total = f"{by} (rate({slo.total}[{window}]))"
        errors = f"{total}\n  - {by} (rate({slo.good}[{window}]))"
        # A window with no events records nothing rather than NaN (see the alerts' file header).
        rules.append(
            {
                "record": f"landed:slo_errors:ratio_rate{window}",
                "expr": f"(\n  {errors}\n)\n/ ({total} > 0)",
                "labels": dict(labels),
            }
        )
    for window in sorted({b.long for b in BURNS}, key=WINDOWS.index):
        rules.append(
            {
                "record": f"landed:slo_events:increase{window}",
                "expr": f"{by} (increase({slo.total}[{window}]))",
                "labels": dict(labels),
            }
        )
    return rules


def budget_rules(slo: Slo) -> list[dict[str, Any]]:
    """Per instance: its objective, the budget left over its window, its burn rates."""
    labels = {"slo": slo.name} | ({"owner": slo.owner} if slo.owner else {})
    sel = slo.selector()
    rules: list[dict[str, Any]] = [
        {
            "record": "landed:slo_objective:ratio",
            "expr": f"vector({_num(slo.objective)})",
            "labels": dict(labels),
        },
        {
            "record": "landed:slo_budget_remaining:ratio",
            "expr": f"1 - landed:slo_errors:ratio_rate{slo.window}{sel} / {_num(slo.budget)}",
            "labels": dict(labels),
        },
    ]
    for window in ("1h", "6h", "3d"):
        rules.append(
            {
                "record": f"landed:slo_burn_rate:rate{window}",
                "expr": f"landed:slo_errors:ratio_rate{window}{sel} / {_num(slo.budget)}",
                "labels": dict(labels),
            }
        )
    return rules


def alert_rules(slo: Slo, about: str) -> list[dict[str, Any]]:
    """The three multi-window burn-rate alerts of one SLO instance."""
    sel = slo.selector()
    rules = []
    for burn in BURNS:
        limit = _num(burn.factor * slo.budget)
        expr = (
            f"landed:slo_errors:ratio_rate{burn.long}{sel} > {limit}\n"
            f"and landed:slo_errors:ratio_rate{burn.short}{sel} > {limit}\n"
            f"and landed:slo_events:increase{burn.long}{sel} >= {slo.min_events}"
        )
        spent = "on time" if burn.factor == 1 else f"{_num(burn.factor)} times too fast"
        rules.append(
            {
                "alert": slo.alert + burn.suffix,
                "expr": expr,
                "labels": {"severity": burn.severity, "slo": slo.name},
                "annotations": {
                    "summary": (
                        f"{slo.summary} for {about}: {{{{ $value | humanizePercentage }}}} "
                        f"of events bad over {burn.long}, budget {_num(slo.budget * 100)}%"
                    ),
                    "description": (
                        f"Over both {burn.long} and {burn.short}, the {slo.name} SLO "
                        f"({_num(slo.objective * 100)}% over {slo.window}) of {about} spends "
                        f"its error budget {spent} (error ratio over {limit}), with at least "
                        f"{slo.min_events} events in {burn.long}."
                    ),
                    "about": about,
                },
            }
        )
    return rules
