"""The SLOs (deploy/prometheus/slos.yaml): each one's objective, the error budget left and the
burn rates, per owner for the proof rate; the task-duration histogram with its exemplars."""

from __future__ import annotations

from grafana_foundation_sdk.builders import dashboard as dash
from grafana_foundation_sdk.models import dashboard

from dashboards.panels import (
    base_board,
    stat_panel,
    table_panel,
    ts_panel,
)

__all__ = ["slo"]

_RATE = "[$__rate_interval]"
_PROOF = 'slo="proof-rate"'
_SETTLE = 'slo="settle-latency"'
_NO_TASKS = "No settled task in the window yet: the SLO has nothing to count"


def _proof_rate(board: dash.Dashboard) -> dash.Dashboard:
    board = board.with_row(dash.Row("Proof rate: done claims proven, per owner"))
    board = board.with_panel(
        stat_panel(
            "Objective",
            "The share of done claims that must be proven over the SLO's window (slos.yaml).",
            (f"min(landed:slo_objective:ratio{{{_PROOF}}})", ""),
            "percentunit",
        )
    )
    board = board.with_panel(
        ts_panel(
            "Error budget left",
            "1 - (errors over the window / budget), per owner: 0 is spent, below 0 overspent.",
            [(f"landed:slo_budget_remaining:ratio{{{_PROOF}}}", "{{owner}}")],
            "percentunit",
            w=18,
            no_value=_NO_TASKS,
        )
    )
    board = board.with_panel(
        ts_panel(
            "Burn rate per owner (1h and 6h)",
            "How many times faster than allowed each owner spends its budget: pages at 14.4 "
            "(1h) and 6 (6h).",
            [
                (f"landed:slo_burn_rate:rate1h{{{_PROOF}}}", "1h {{owner}}"),
                (f"landed:slo_burn_rate:rate6h{{{_PROOF}}}", "6h {{owner}}"),
            ],
            "short",
            no_value=_NO_TASKS,
        )
    )
    return board.with_panel(
        table_panel(
            "Per owner",
            "Budget left, burn rates over 1h, 6h and 3d, and done claims in the last hour.",
            [
                (f"landed:slo_budget_remaining:ratio{{{_PROOF}}}", "budget left"),
                (f"landed:slo_burn_rate:rate1h{{{_PROOF}}}", "burn 1h"),
                (f"landed:slo_burn_rate:rate6h{{{_PROOF}}}", "burn 6h"),
                (f"landed:slo_burn_rate:rate3d{{{_PROOF}}}", "burn 3d"),
                (f"landed:slo_events:increase1h{{{_PROOF}}}", "done claims 1h"),
            ],
            w=12,
        )
    )


def _settle_latency(board: dash.Dashboard) -> dash.Dashboard:
    board = board.with_row(dash.Row("Settle latency: tasks settled within 300 s"))
    board = board.with_panel(
        stat_panel(
            "Budget left",
            "The settle-latency SLO's error budget left over its window.",
            (f"min(landed:slo_budget_remaining:ratio{{{_SETTLE}}})", ""),
            "percentunit",
            no_value=_NO_TASKS,
        )
    )
    board = board.with_panel(
        ts_panel(
            "Burn rates",
            "Slow settles spending the budget, over 1h, 6h and 3d.",
            [(f"landed:slo_burn_rate:rate{w}{{{_SETTLE}}}", w) for w in ("1h", "6h", "3d")],
            "short",
            w=6,
            no_value=_NO_TASKS,
        )
    )
    return board.with_panel(
        ts_panel(
            "Task duration (p95) with exemplars",
            "From a task's start to its receipt (the runner's histogram). Each dot is an "
            "exemplar: its links open the task's trace and its page in the Temporal Web UI.",
            [
                (
                    "histogram_quantile(0.95, sum by (le) "
                    f"(rate(landed_task_duration_seconds_bucket{_RATE})))",
                    "p95",
                )
            ],
            "s",
            no_value="No task timed: the runner's metrics page (LANDED_RUNNER_METRICS_PORT, "
            "landed dev opens 9467) is not scraped, or nothing settled",
            exemplars=True,
        )
    )


def slo() -> dashboard.Dashboard:
    board = base_board(
        "landed / SLOs",
        "landed-slo",
        "landed's SLOs: objective, error budget left and burn rates, per owner.",
        "now-7d",
    )
    return _settle_latency(_proof_rate(board)).build()
