"""One owner's drill-down: the scorecard, verdicts and loops of the owner picked in $owner."""

from __future__ import annotations

from grafana_foundation_sdk.builders import dashboard as dash
from grafana_foundation_sdk.models import dashboard

from dashboards.fleet import COST_NO_VALUE
from dashboards.panels import DATASOURCE, datasource_variable, stat_panel, table_panel, ts_panel

__all__ = ["owner"]

_RATE = "[$__rate_interval]"
_RANGE = "[$__range]"
_OWNER = 'owner="$owner"'
_SETTLED = f"landed_tasks_settled_total{{{_OWNER}}}"


def _owner_variable() -> dash.QueryVariable:
    return (
        dash.QueryVariable("owner")
        .label("Owner")
        .datasource(DATASOURCE)
        .query("label_values(landed_tasks_started_total, owner)")
        .refresh(dashboard.VariableRefresh.ON_TIME_RANGE_CHANGED)
        .sort(dashboard.VariableSort.ALPHABETICAL_ASC)
    )


def _scorecard(board: dash.Dashboard) -> dash.Dashboard:
    board = board.with_row(dash.Row("$owner"))
    for title, record, unit in (
        ("Proof rate", "proof_rate:ratio_rate1h", "percentunit"),
        ("Hold rate", "hold_rate:ratio_rate1h", "percentunit"),
        ("Cost per verified task", "cost_per_verified_task:usd_rate1h", "currencyUSD"),
    ):
        board = board.with_panel(
            stat_panel(
                title,
                f"{title} of $owner, last hour.",
                (f"landed:owner:{record}{{{_OWNER}}}", ""),
                unit,
                no_value=COST_NO_VALUE if record.startswith("cost") else None,
            )
        )
    return board.with_panel(
        stat_panel(
            "Verified revenue",
            "USD traced to $owner's P4 receipts over the time range.",
            (f"sum(increase(landed_verified_revenue_usd_total{{{_OWNER}}}{_RANGE}))", ""),
            "currencyUSD",
        )
    )


def _activity(board: dash.Dashboard) -> dash.Dashboard:
    board = board.with_panel(
        ts_panel(
            "Done claimed vs done proven",
            "$owner's done claims, and those proven (P3 or above).",
            [
                (f"sum(increase(landed_done_claimed_total{{{_OWNER}}}{_RATE}))", "done claimed"),
                (f"sum(increase(landed_done_proven_total{{{_OWNER}}}{_RATE}))", "done proven"),
            ],
            "short",
        )
    )
    board = board.with_panel(
        ts_panel(
            "Verdicts by rung",
            "$owner's settled tasks by verdict and the highest rung proven.",
            [
                (f"sum by (verdict, rung) (increase({_SETTLED}{_RATE}))", ""),
            ],
            "short",
            bars=True,
        )
    )
    return board.with_panel(
        table_panel(
            "Loops",
            "$owner's loops: tasks started, done claimed and done proven over the time range.",
            [
                (
                    f"sum by (loop) (increase(landed_tasks_started_total{{{_OWNER}}}{_RANGE}))",
                    "started",
                ),
                (
                    f"sum by (loop) (increase(landed_done_claimed_total{{{_OWNER}}}{_RANGE}))",
                    "done claimed",
                ),
                (
                    f"sum by (loop) (increase(landed_done_proven_total{{{_OWNER}}}{_RANGE}))",
                    "done proven",
                ),
            ],
        )
    )


def owner() -> dashboard.Dashboard:
    board = (
        dash.Dashboard("landed / owner")
        .uid("landed-owner")
        .tags(["landed"])
        .description("One owner's agent tasks: pick the owner in $owner.")
        .time("now-6h", "now")
        .refresh("1m")
        .with_variable(datasource_variable())
        .with_variable(_owner_variable())
    )
    return _activity(_scorecard(board)).build()
