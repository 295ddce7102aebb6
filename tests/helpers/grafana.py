"""The committed Grafana dashboards as data: every panel's PromQL, with Grafana's variables
replaced the way Grafana would before it sends a query to Prometheus."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

__all__ = ["BOARDS", "panel_queries", "substitute"]

ROOT = Path(__file__).resolve().parents[2]
BOARDS = sorted((ROOT / "dashboards").glob("*.json"))

# What Grafana puts in place of its built-in variables; windows long enough that a test run's
# whole history is inside them.
BUILTINS = {
    "__rate_interval": "5m",
    "__interval": "15s",
    "__range": "1h",
    "__range_s": "3600",
    "__range_ms": "3600000",
}


def substitute(expr: str, variables: dict[str, str]) -> str:
    """``expr`` with $name, ${name} and [[name]] replaced; an unknown variable raises, so a
    panel that grows a new one is noticed here instead of sending Prometheus a literal $."""
    values = BUILTINS | variables

    def value(match: re.Match[str]) -> str:
        name = next(g for g in match.groups() if g)
        if name not in values:
            raise KeyError(f"{expr!r} uses ${name}, which the test does not know")
        return values[name]

    return re.sub(r"\$\{(\w+)(?::\w+)?\}|\$(\w+)|\[\[(\w+)\]\]", value, expr)


def panel_queries(path: Path) -> list[tuple[str, str]]:
    """(panel title, PromQL) for every target of every panel, rows' nested panels included."""
    board: dict[str, Any] = json.loads(path.read_text())
    found = []
    panels = list(board["panels"])
    while panels:
        panel = panels.pop(0)
        panels.extend(panel.get("panels", []))
        for target in panel.get("targets", []):
            found.append((f"{path.name}: {panel['title']}", target["expr"]))
    return found
