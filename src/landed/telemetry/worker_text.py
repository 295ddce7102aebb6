"""A role's metrics page as the scrape asks for it: the SDK's text, the role's own gauges and
(the runner's) task-duration histogram, in Prometheus text 0.0.4, or all of it re-rendered as
OpenMetrics when the Accept header names it, which carries the histogram's exemplars."""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.metrics_core import Metric
from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.registry import Collector

from landed.telemetry.openmetrics import negotiate, render
from landed.telemetry.task_metrics import REGISTRY as TASKS

__all__ = ["page"]

_TEXT = "text/plain; version=0.0.4; charset=utf-8"


class _Parsed(Collector):
    """Families parsed from exposition text, served again as they are."""

    def __init__(self, text: str) -> None:
        self.text = text

    def collect(self) -> Iterator[Metric]:
        yield from text_string_to_metric_families(self.text)


def page(core: str, own: str, role: str, accept: str) -> tuple[bytes, str]:
    """The body and Content-Type of the role's /metrics answer."""
    openmetrics, content_type = negotiate(accept)
    text = core.rstrip("\n") + "\n" + own if core else own
    if not openmetrics:
        tasks = generate_latest(TASKS).decode() if role == "runner" else ""
        return (text + tasks).encode(), _TEXT
    registry = CollectorRegistry(auto_describe=False)
    try:
        registry.register(_Parsed(text))
        if role == "runner":
            registry.register(_Registered(TASKS))
        return render(registry, True), content_type
    except ValueError:  # SDK text the parser cannot read: the plain page still answers
        tasks = generate_latest(TASKS).decode() if role == "runner" else ""
        return (text + tasks).encode(), _TEXT


class _Registered(Collector):
    def __init__(self, registry: CollectorRegistry) -> None:
        self.registry = registry

    def collect(self) -> Iterator[Metric]:
        yield from self.registry.collect()
