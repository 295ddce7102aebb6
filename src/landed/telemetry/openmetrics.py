"""The text a scrape asks for: OpenMetrics (with exemplars) when its Accept header names it, as
Prometheus's does, else Prometheus's plain text format 0.0.4 (without exemplars)."""

from __future__ import annotations

from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from prometheus_client.openmetrics import exposition as om
from prometheus_client.registry import CollectorRegistry

__all__ = ["negotiate", "render"]


def negotiate(accept: str) -> tuple[bool, str]:
    """Whether to answer in OpenMetrics, and the Content-Type to answer with."""
    for part in accept.split(","):
        media, _, params = part.strip().partition(";")
        if media.strip() != "application/openmetrics-text":
            continue
        # q=0 says "not this one"; any other weight (or none) accepts it.
        weights = [p.strip()[2:] for p in params.split(";") if p.strip().startswith("q=")]
        if not weights or _weight(weights[0]) > 0:
            return True, om.CONTENT_TYPE_LATEST
    return False, CONTENT_TYPE_LATEST


def render(registry: CollectorRegistry, openmetrics: bool) -> bytes:
    if openmetrics:
        return bytes(om.generate_latest(registry))  # type: ignore[no-untyped-call]
    return generate_latest(registry)


def _weight(text: str) -> float:
    try:
        return float(text)
    except ValueError:  # a malformed weight is no acceptance
        return 0.0
