"""HTTP-read probes: ``http``, ``provider_object``, ``payment``, ``deployment``, the outbound logs,
and a pull-request URL. Credentials go only to the source's own origin."""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import quote

from landed.probes.contract import (
    CallLogProbe,
    DeploymentProbe,
    HttpProbe,
    PaymentProbe,
    ProviderObjectProbe,
    SentLogProbe,
)
from landed.probes.fetch import Fetched, _display, _unavailable, fetch
from landed.probes.reading import NO_VALUE, Capture, Limits, ProbeError, Reading, cut, strict_json
from landed.probes.settings import SourceConfig
from landed.probes.sources import SourceRegistry
from landed.probes.values import strict_equal

__all__ = [
    "Fetched",
    "fetch",
    "read_deployment",
    "read_http",
    "read_object",
    "read_outbound",
    "read_payment",
    "request_path",
]


async def read_http(
    probe: HttpProbe, cfg: SourceConfig | None, registry: SourceRegistry, limits: Limits
) -> Reading:
    got = await fetch(registry, probe.source, cfg, probe.url, limits)
    reading = Reading(capture=got.capture)
    if got.status != probe.status:
        # Accepting any status (None) still does not read an error page as the answer: a 503
        # or a refused credential observed nothing, unless that status is what was claimed.
        problem = _unavailable(got.status)
        if problem is not None:
            raise ProbeError(f"GET {_display(got.url)}: {problem}", got.capture)
    if probe.status is not None and got.status != probe.status:
        reading.failed_claims.append(
            f"the probe returned HTTP {got.status} from {_display(got.url)}; "
            f"expected {probe.status}"
        )
    return reading


async def _read_json_object(
    name: str, cfg: SourceConfig | None, path: str, registry: SourceRegistry, limits: Limits
) -> Reading:
    got = await fetch(registry, name, cfg, path, limits)
    reading = Reading(capture=got.capture)
    if got.status in (404, 410):
        reading.missing = True
        reading.note = f"HTTP {got.status}: no such object at {_display(got.url)}"
        return reading
    problem = _unavailable(got.status)
    if problem is not None:
        raise ProbeError(f"GET {_display(got.url)}: {problem}", got.capture)
    if not 200 <= got.status < 300:
        reading.failed_claims.append(
            f"the probe returned HTTP {got.status} from {_display(got.url)}"
        )
        return reading
    if not got.capture.complete:
        reading.failed_claims.append(f"the object is {got.capture.total} bytes, too large to read")
        return reading
    try:
        reading.document = strict_json(got.capture.data)
    except (json.JSONDecodeError, RecursionError):
        reading.failed_claims.append(f"the probe returned non-JSON from {_display(got.url)}")
    except ValueError as exc:
        reading.failed_claims.append(
            f"the probe returned JSON from {_display(got.url)} that cannot be judged: {exc}"
        )
    return reading


def _path(template: str, ident: str) -> str:
    return template.replace("{id}", quote(ident, safe=""))


def request_path(probe: Any) -> str | None:
    """The URL or path an HTTP-family probe GETs first, as its reader builds it (None for any
    other kind): what the source's URL policy is checked against before anything is read."""
    if isinstance(probe, HttpProbe):
        return probe.url
    if isinstance(probe, DeploymentProbe):
        return probe.path
    if isinstance(probe, ProviderObjectProbe):
        return _path(probe.path, probe.object_id)
    if isinstance(probe, PaymentProbe):
        return _path(probe.path, probe.payment_id)
    if isinstance(probe, SentLogProbe | CallLogProbe):
        return _path(
            probe.path, probe.message_id if isinstance(probe, SentLogProbe) else probe.call_id
        )
    return None


async def read_object(
    probe: ProviderObjectProbe, cfg: SourceConfig, registry: SourceRegistry, limits: Limits
) -> Reading:
    return await _read_json_object(
        probe.source, cfg, _path(probe.path, probe.object_id), registry, limits
    )


def _field(document: Any, name: str) -> Any:
    return document.get(name, NO_VALUE) if isinstance(document, dict) else NO_VALUE


async def read_payment(
    probe: PaymentProbe, cfg: SourceConfig, registry: SourceRegistry, limits: Limits
) -> Reading:
    reading = await _read_json_object(
        probe.source, cfg, _path(probe.path, probe.payment_id), registry, limits
    )
    if reading.missing or reading.failed_claims:
        return reading
    doc = reading.document
    for name in ("amount", "currency", "status"):
        claimed = getattr(probe, name)
        if claimed is None:
            continue
        actual = _field(doc, name)
        if actual is NO_VALUE:
            reading.failed_claims.append(f"the payment object has no {name!r} field")
            continue
        if name == "amount":
            ok = strict_equal(actual, claimed)
        else:  # currency and status codes compare case-insensitively ("USD" is "usd")
            ok = isinstance(actual, str) and actual.lower() == str(claimed).lower()
        said = f"{name} {_shown(actual)}"
        if ok:
            reading.checked_claims.append(said)
        else:
            reading.failed_claims.append(f"the payment shows {said}; claimed {_shown(claimed)}")
    status = _field(doc, "status")
    # A status is a word: a longer text is not one to keep as the reading's value.
    reading.value = status if isinstance(status, str) and len(status) <= _SHOWN else NO_VALUE
    return reading


async def read_deployment(
    probe: DeploymentProbe, cfg: SourceConfig, registry: SourceRegistry, limits: Limits
) -> Reading:
    got = await fetch(registry, probe.source, cfg, probe.path, limits)
    reading = Reading(capture=got.capture)
    problem = _unavailable(got.status)
    if problem is not None:
        raise ProbeError(f"GET {_display(got.url)}: {problem}", got.capture)
    if got.status in (404, 410):
        reading.missing = True
        reading.note = f"HTTP {got.status}: nothing is served at {_display(got.url)}"
        return reading
    if not 200 <= got.status < 300:
        reading.failed_claims.append(
            f"the probe returned HTTP {got.status} from {_display(got.url)}"
        )
        return reading
    if probe.version is not None:
        served = _served_version(got.capture)
        if served == probe.version:
            reading.checked_claims.append(f"version {_shown(served)}")
        else:
            shown = "no version" if served is None else f"version {_shown(served)}"
            reading.failed_claims.append(
                f"the deployment serves {shown}; claimed {_shown(probe.version)}"
            )
        reading.value = served if served is not None else NO_VALUE
    if probe.sha256 is not None:
        if got.capture.over_limit:
            reading.failed_claims.append("the served content is too large to hash")
        elif got.capture.sha256 == probe.sha256.lower():
            reading.checked_claims.append(f"sha256 {got.capture.sha256}")
        else:
            reading.failed_claims.append(
                f"the served content has sha256 {got.capture.sha256}; "
                f"claimed {probe.sha256.lower()}"
            )
    return reading


# How much of a server's value a message quotes: the evidence holds the rest, capped.
_SHOWN = 200


def _shown(value: Any) -> str:
    """A value as JSON for a message, cut (with a mark) so server text cannot swell it."""
    return cut(json.dumps(value, ensure_ascii=False, default=str), _SHOWN)


def _served_version(capture: Capture) -> str | None:
    """``{"version": "..."}`` in a JSON body, else the whole body when it is one short line.

    Only a JSON string is a version: a number would be re-spelled (1.10 reads as 1.1) and
    ``true`` is none. A body that is a bare JSON string is that string.
    """
    if not capture.complete:
        return None
    text = capture.data.decode("utf-8", errors="replace").strip()
    one_line = text if text and "\n" not in text and len(text) <= 200 else None
    try:
        doc = strict_json(text)
    except json.JSONDecodeError:
        return one_line
    except (ValueError, RecursionError):
        return None  # two "version" keys, NaN...: no version a claim can rest on
    if isinstance(doc, dict):
        version = doc.get("version")
        if isinstance(version, int) and not isinstance(version, bool):
            return str(version)  # a whole number reads the same as text
        return version if isinstance(version, str) else None
    if isinstance(doc, str):
        return doc
    # A bare number or literal: its own text, as served.
    return one_line


async def read_outbound(
    probe: SentLogProbe | CallLogProbe, cfg: SourceConfig, registry: SourceRegistry, limits: Limits
) -> Reading:
    ident = probe.message_id if isinstance(probe, SentLogProbe) else probe.call_id
    reading = await _read_json_object(probe.source, cfg, _path(probe.path, ident), registry, limits)
    if reading.missing or reading.failed_claims:
        return reading
    status = _field(reading.document, probe.status_field)
    if not isinstance(status, str):
        what = "message" if isinstance(probe, SentLogProbe) else "call"
        reading.failed_claims.append(f"the {what} has no {probe.status_field!r} text field")
        return reading
    if len(status) > _SHOWN:
        reading.failed_claims.append(
            f"the {probe.status_field!r} field holds {len(status)} characters, not a status"
        )
        return reading
    reading.value = status.strip().lower()
    return reading
