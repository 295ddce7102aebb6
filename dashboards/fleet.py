"""The fleet scorecard: the GOV-12 counts, verdicts, probes, loops and the verifier's queue."""

from __future__ import annotations

from grafana_foundation_sdk.builders import dashboard as dash
from grafana_foundation_sdk.models import dashboard

from dashboards.panels import (
    base_board,
    stat_panel,
    table_panel,
    ts_panel,
)

__all__ = ["COST_NO_VALUE", "QUEUE_NO_VALUE", "fleet"]

#: What an empty panel says on a default setup, naming what fills it.
COST_NO_VALUE = (
    "No task proven in the last hour, or no cost recorded: cost comes from the act's cost.usd "
    "and LANDED_RUNNER_VERIFY_USD_PER_SECOND (0 unless set)"
)
QUEUE_NO_VALUE = (
    "No verifier metrics: set LANDED_VERIFIER_METRICS_PORT (landed dev opens 9466) and scrape it"
)

_RATE = "[$__rate_interval]"
_RANGE = "[$__range]"
# The verifier's own SDK metrics (its role's global tag), whatever its queue is called.
_VERIFIER_QUEUE = 'landed_role="verifier"'


def _scorecard(board: dash.Dashboard) -> dash.Dashboard:
    board = board.with_row(dash.Row("Scorecard (DoD v1.0 GOV-12)"))
    board = board.with_panel(
        stat_panel(
            "Proof rate",
            "Done proven (P3 or above) / done claimed, last hour.",
            ("landed:proof_rate:ratio_rate1h", ""),
            "percentunit",
        )
    )
    board = board.with_panel(
        stat_panel(
            "Hold rate",
            "Held / settled, last hour.",
            ("landed:hold_rate:ratio_rate1h", ""),
            "percentunit",
        )
    )
    board = board.with_panel(
        stat_panel(
            "Cost per verified task",
            "All cost (act and verify) / done proven, last hour.",
            ("landed:cost_per_verified_task:usd_rate1h", ""),
            "currencyUSD",
            no_value=COST_NO_VALUE,
        )
    )
    board = board.with_panel(
        stat_panel(
            "Verified revenue",
            "USD traced to P4 receipts over the dashboard's time range.",
            (f"sum(increase(landed_verified_revenue_usd_total{_RANGE}))", ""),
            "currencyUSD",
        )
    )
    board = board.with_panel(
        ts_panel(
            "Done claimed vs done proven",
            "Done claims settled, and those read back and proven (P3 or above).",
            [
                (f"sum(increase(landed_done_claimed_total{_RATE}))", "done claimed"),
                (f"sum(increase(landed_done_proven_total{_RATE}))", "done proven"),
            ],
            "short",
        )
    )
    return board.with_panel(
        ts_panel(
            "Verdicts by rung",
            "Settled tasks by verdict and the highest rung proven.",
            [(f"sum by (verdict, rung) (increase(landed_tasks_settled_total{_RATE}))", "")],
            "short",
            bars=True,
        )
    )


def _owners(board: dash.Dashboard) -> dash.Dashboard:
    board = board.with_row(dash.Row("Owners"))
    return board.with_panel(
        table_panel(
            "Per owner",
            "Each owner's proof rate, hold rate, cost per verified task and done claims.",
            [
                ("landed:owner:proof_rate:ratio_rate1h", "proof rate"),
                ("landed:owner:hold_rate:ratio_rate1h", "hold rate"),
                ("landed:owner:cost_per_verified_task:usd_rate1h", "cost per verified task"),
                (f"sum by (owner) (increase(landed_done_claimed_total{_RANGE}))", "done claimed"),
            ],
        )
    )


def _probes_and_loops(board: dash.Dashboard) -> dash.Dashboard:
    board = board.with_row(dash.Row("Probes, loops and workers"))
    board = board.with_panel(
        ts_panel(
            "Probe latency (p95)",
            "How long a read-back takes, by probe kind (from the receipts' signed readings).",
            [
                (
                    "histogram_quantile(0.95, sum by (le, kind) "
                    f"(rate(landed_probe_duration_seconds_bucket{_RATE})))",
                    "{{kind}}",
                )
            ],
            "s",
            exemplars=True,
        )
    )
    board = board.with_panel(
        ts_panel(
            "Probe outcomes",
            "Observations by kind and outcome: pass, mismatch, empty, probe-error, ...",
            [(f"sum by (kind, outcome) (increase(landed_probe_observations_total{_RATE}))", "")],
            "short",
            bars=True,
        )
    )
    board = board.with_panel(
        ts_panel(
            "Tripwires and repairs",
            "Tripwire trips by loop, repair tasks still open, and loops held for a person.",
            [
                (f"sum by (loop) (increase(landed_tripwire_trips_total{_RATE}))", "trips {{loop}}"),
                ("sum by (loop) (landed_repairs_open)", "open repairs {{loop}}"),
                ("sum by (loop) (landed_repairs_held)", "held {{loop}}"),
            ],
            "short",
        )
    )
    return board.with_panel(
        ts_panel(
            "Verifier queue",
            "How long read-backs wait before a verifier picks them up (p95, Temporal SDK), and "
            "whether each role is up.",
            [
                (
                    "histogram_quantile(0.95, sum by (le, task_queue) (rate("
                    f"temporal_activity_schedule_to_start_latency_bucket{{{_VERIFIER_QUEUE}}}"
                    f"{_RATE})))",
                    "wait p95 {{task_queue}}",
                ),
                ("max by (role) (landed_worker_up)", "up {{role}}"),
            ],
            "s",
            no_value=QUEUE_NO_VALUE,
        )
    )


def fleet() -> dashboard.Dashboard:
    board = base_board(
        "landed / fleet scorecard",
        "landed-fleet",
        "Proof rate, hold rate, cost and revenue of every agent task landed settled.",
        "now-6h",
    )
    return _probes_and_loops(_owners(_scorecard(board))).build()
