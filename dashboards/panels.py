"""What every landed panel shares: the datasource variable, one query builder, panel shapes."""

from __future__ import annotations

from grafana_foundation_sdk.builders import common as common_b
from grafana_foundation_sdk.builders import dashboard as dash
from grafana_foundation_sdk.builders import prometheus, stat, table, timeseries
from grafana_foundation_sdk.models import common, dashboard
from grafana_foundation_sdk.models import prometheus as prom_model

__all__ = ["DATASOURCE", "Query", "datasource_variable", "stat_panel", "table_panel", "ts_panel"]

# Every panel reads the datasource the importer picks in $datasource: no uid of ours is baked
# in, so the JSON imports into any Grafana 10+ with a Prometheus that scrapes landed.
DATASOURCE = dashboard.DataSourceRef(type_val="prometheus", uid="${datasource}")

# A query: (PromQL, legend). Grafana's own variables ($__rate_interval, $__range, $owner) are
# substituted by Grafana; tests/dashboards substitutes them to check each against Prometheus.
Query = tuple[str, str]


def datasource_variable() -> dash.DatasourceVariable:
    return dash.DatasourceVariable("datasource").label("Prometheus").type("prometheus")


def _target(ref: str, query: Query, *, instant: bool = False) -> prometheus.Dataquery:
    expr, legend = query
    target = prometheus.Dataquery().ref_id(ref).expr(expr).datasource(DATASOURCE)
    target = target.legend_format(legend or "__auto")
    if instant:
        target = target.instant().format(prom_model.PromQueryFormat.TABLE)
    else:
        target = target.range()
    return target


def _targets(panel: object, queries: list[Query], *, instant: bool = False) -> None:
    for i, query in enumerate(queries):
        panel.with_target(_target(chr(ord("A") + i), query, instant=instant))  # type: ignore[attr-defined]


def stat_panel(title: str, description: str, query: Query, unit: str, w: int = 6) -> stat.Panel:
    panel = (
        stat.Panel()
        .title(title)
        .description(description)
        .datasource(DATASOURCE)
        .unit(unit)
        .height(5)
        .span(w)
        .graph_mode(common.BigValueGraphMode.AREA)
        .reduce_options(common_b.ReduceDataOptions().calcs(["lastNotNull"]))
    )
    _targets(panel, [query])
    return panel


def ts_panel(
    title: str,
    description: str,
    queries: list[Query],
    unit: str,
    *,
    w: int = 12,
    bars: bool = False,
) -> timeseries.Panel:
    panel = (
        timeseries.Panel()
        .title(title)
        .description(description)
        .datasource(DATASOURCE)
        .unit(unit)
        .height(8)
        .span(w)
    )
    if bars:
        panel = panel.draw_style(common.GraphDrawStyle.BARS).stacking(
            common_b.StackingConfig().mode(common.StackingMode.NORMAL)
        )
    _targets(panel, queries)
    return panel


def table_panel(title: str, description: str, queries: list[Query], w: int = 24) -> table.Panel:
    """One row per label set; the instant queries' values side by side (merged)."""
    panel = (
        table.Panel()
        .title(title)
        .description(description)
        .datasource(DATASOURCE)
        .height(8)
        .span(w)
        .with_transformation(dashboard.DataTransformerConfig(id_val="merge", options={}))
    )
    _targets(panel, queries, instant=True)
    return panel
