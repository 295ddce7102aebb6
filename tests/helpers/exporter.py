"""Reading the exporter in tests: a ledger's place, an exporter on it, its samples."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import aiohttp
from prometheus_client.parser import text_string_to_metric_families

from landed.telemetry.exporter import Exporter
from landed.telemetry.settings import ExporterSettings

__all__ = ["Place", "exporter_on", "get", "samples", "total"]

Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


@dataclass
class Place:
    url: str
    backend: str
    path: Path | None = None  # the SQLite file
    schema: str = ""
    admin_dsn: str = ""


def exporter_on(place: Place, **settings: object) -> Exporter:
    """An exporter on ``place`` that keeps no state file unless ``use_state`` says so."""
    values = {
        "ledger_url": place.url,
        "port": 0,
        "claim_lag_seconds": 0.0,
        "use_state": False,
        **settings,
    }
    return Exporter(ExporterSettings(**values))  # type: ignore[arg-type]


async def get(url: str) -> tuple[int, str]:
    async with aiohttp.ClientSession() as http, http.get(url) as resp:
        return resp.status, await resp.text()


def samples(text: str) -> Samples:
    """Every sample of an exposition, keyed by name and sorted labels."""
    out: Samples = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


def total(found: Samples, name: str, **want: str) -> float:
    """The sum of ``name``'s samples whose labels include ``want``."""
    return sum(
        v
        for (n, labels), v in found.items()
        if n == name and all(dict(labels).get(k) == x for k, x in want.items())
    )
