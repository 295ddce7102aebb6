"""What every landed panel shares: the datasource variable, one query builder, panel shapes."""

from __future__ import annotations

from grafana_foundation_sdk.builders import common as common_b
from grafana_foundation_sdk.builders import dashboard as dash
from grafana_foundation_sdk.builders import prometheus, stat, table, timeseries
from grafana_foundation_sdk.models import common, dashboard
from grafana_foundation_sdk.models import prometheus as prom_model

__all__ = [
    "DATASOURCE",
    "Query",
    "base_board",
    "datasource_variable",
    "exemplar_links",
    "link_variables",
    "stat_panel",
    "table_panel",
    "ts_panel",
]

# Every panel reads the datasource the importer picks in $datasource: no uid of ours is baked
# in, so the JSON imports into any Grafana 10+ with a Prometheus that scrapes landed.
DATASOURCE = dashboard.DataSourceRef(type_val="prometheus", uid="${datasource}")

# A query: (PromQL, legend). Grafana's own variables ($__rate_interval, $__range, $owner) are
# substituted by Grafana; tests/dashboards substitutes them to check each against Prometheus.
Query = tuple[str, str]


def datasource_variable() -> dash.DatasourceVariable:
    return dash.DatasourceVariable("datasource").label("Prometheus").type("prometheus")


def base_board(title: str, uid: str, description: str, since: str) -> dash.Dashboard:
    """A landed dashboard before its panels: tags, refresh, the datasource and link variables."""
    board = (
        dash.Dashboard(title)
        .uid(uid)
        .tags(["landed"])
        .description(description)
        .time(since, "now")
        .refresh("1m")
        .with_variable(datasource_variable())
    )
    for variable in link_variables():
        board = board.with_variable(variable)
    return board


def link_variables() -> list[dash.TextBoxVariable]:
    """Where an exemplar's links lead: the trace viewer (the trace id is appended) and the
    Temporal Web UI with its namespace (the task's workflow page)."""
    return [
        dash.TextBoxVariable("trace_url")
        .label("Trace URL (trace id appended)")
        .default_value("http://127.0.0.1:16686/trace/"),
        dash.TextBoxVariable("temporal_ui")
        .label("Temporal Web UI")
        .default_value("http://127.0.0.1:8233/namespaces/default"),
    ]


def exemplar_links() -> list[dash.DashboardLink]:
    """Data links of an exemplar (a dot on the graph): its trace, and its task in the Web UI."""
    return [
        dash.DashboardLink("Trace of this observation")
        .url("${trace_url}${__data.fields.trace_id}")
        .target_blank(True),
        dash.DashboardLink("Task in the Temporal Web UI")
        .url("${temporal_ui}/workflows/${__data.fields.task_id}")
        .target_blank(True),
    ]


def _target(
    ref: str, query: Query, *, instant: bool = False, exemplars: bool = False
) -> prometheus.Dataquery:
    expr, legend = query
    target = prometheus.Dataquery().ref_id(ref).expr(expr).datasource(DATASOURCE)
    if exemplars:
        target = target.exemplar(True)
    target = target.legend_format(legend or "__auto")
    if instant:
        target = target.instant().format(prom_model.PromQueryFormat.TABLE)
    else:
        target = target.range()
    return target


def _targets(
    panel: object, queries: list[Query], *, instant: bool = False, exemplars: bool = False
) -> None:
    for i, query in enumerate(queries):
        target = _target(chr(ord("A") + i), query, instant=instant, exemplars=exemplars)
        panel.with_target(target)  # type: ignore[attr-defined]


def stat_panel(
    title: str,
    description: str,
    query: Query,
    unit: str,
    w: int = 6,
    *,
    no_value: str | None = None,
) -> stat.Panel:
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
    if no_value:  # an empty panel says why, naming the setting that fills it
        panel = panel.no_value(no_value)
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
    no_value: str | None = None,
    exemplars: bool = False,
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
    if no_value:
        panel = panel.no_value(no_value)
    if exemplars:
        panel = panel.data_links(exemplar_links())  # type: ignore[arg-type]
    _targets(panel, queries, exemplars=exemplars)
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
