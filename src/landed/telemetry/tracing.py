"""Tracing, configured by the standard OTEL_* variables and off when they name no endpoint.

A process configures it once (a role at start, ``landed submit``); the one plugin then puts
Temporal's ``TracingInterceptor`` on every client and worker, so one trace runs from the
submission through the workflow and the three role processes. Unset, nothing is installed:
no interceptor, no span, no exporter thread.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

# The SDK, its exporters and Temporal's interceptor load only when tracing is configured: a
# process without OTEL_* pays nothing for them.
if TYPE_CHECKING:
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import SpanProcessor, TracerProvider
    from opentelemetry.sdk.trace.export import SpanExporter
    from opentelemetry.trace import Tracer
    from temporalio.contrib.opentelemetry import TracingInterceptor

__all__ = [
    "PROTOCOLS",
    "TracingConfigError",
    "configure",
    "enabled",
    "ensure",
    "install",
    "interceptor",
    "protocol",
    "redacting",
    "shutdown",
    "tracer",
]

#: The OTLP protocols landed exports with (OTEL_EXPORTER_OTLP[_TRACES]_PROTOCOL).
PROTOCOLS = ("http/protobuf", "grpc")
_ENDPOINTS = ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT")
_TRACER_NAME = "landed"


class TracingConfigError(ValueError):
    """The OTEL_* settings cannot be used; the message names the variable and the fix."""


@dataclass(frozen=True)
class _Tracing:
    provider: TracerProvider
    tracer: Tracer
    # The one interceptor every client and worker of this process shares (so a worker built
    # on a client adds it once).
    interceptor: TracingInterceptor


# The process's tracing, once configured.
_state: list[_Tracing] = []


def enabled(env: Mapping[str, str] | None = None) -> bool:
    """True when the environment asks for traces: an OTLP endpoint is named, the SDK is not
    disabled and the traces exporter is not ``none``."""
    env = os.environ if env is None else env
    if env.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return False
    if env.get("OTEL_TRACES_EXPORTER", "otlp").strip().lower() == "none":
        return False
    return any(env.get(name, "").strip() for name in _ENDPOINTS)


def protocol(env: Mapping[str, str] | None = None) -> str:
    """The OTLP protocol for traces (the spec's default is http/protobuf)."""
    env = os.environ if env is None else env
    for name in ("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL"):
        value = env.get(name, "").strip()
        if value:
            if value not in PROTOCOLS:
                raise TracingConfigError(
                    f"{name}={value!r} is not a protocol landed exports with; set it to "
                    f"{' or '.join(PROTOCOLS)}"
                )
            return value
    return PROTOCOLS[0]


def _exporter(env: Mapping[str, str]) -> SpanExporter:
    # Each exporter reads its endpoint, headers, TLS and timeout from the same OTEL_* variables.
    if protocol(env) == "grpc":
        from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter

        return OTLPSpanExporter()
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import (
        OTLPSpanExporter as HttpExporter,
    )

    return HttpExporter()


def _resource(service: str) -> Resource:
    """OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES as the SDK reads them; the role's own
    name (landed-runner, ...) where neither names the service."""
    from opentelemetry.sdk.resources import SERVICE_NAME, Resource

    detected = Resource.create()
    named = str(detected.attributes.get(SERVICE_NAME, ""))
    if named and not named.startswith("unknown_service"):
        return detected
    return detected.merge(Resource({SERVICE_NAME: service}))


def configure(service: str) -> TracerProvider | None:
    """Install tracing for this process from the OTEL_* environment; None (and nothing
    installed) when it names no endpoint. ``service`` is the default service name."""
    if not enabled():
        return None
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    # Every span leaves through the receipt's redaction: the SDK's activity spans record each
    # exception's message and stack trace (landed.telemetry.trace_redact).
    processor = redacting(BatchSpanProcessor(_exporter(os.environ)))
    provider = TracerProvider(resource=_resource(service))
    provider.add_span_processor(processor)
    install(provider)
    return provider


def redacting(processor: SpanProcessor) -> SpanProcessor:
    """``processor`` handed every span with its exception texts and status description through
    the receipt's redaction. ``configure`` puts its exporter behind it; an application that
    gives landed its own provider (``install``) adds its exporting processor through it."""
    from landed.telemetry.trace_redact import RedactingSpanProcessor

    return RedactingSpanProcessor(processor)


def ensure(service: str) -> None:
    """Configure tracing from the environment unless this process already has it (a role, an
    application that installed its own provider); a provider made here flushes at exit."""
    if not _state:
        configure(service)


def install(provider: TracerProvider | None) -> None:
    """Make ``provider`` this process's tracing (None: off). Tests install one with an
    in-memory exporter; the global OpenTelemetry provider is left to the application, whose
    exporting processor should come through ``redacting`` (spans carry exception texts)."""
    _state.clear()
    if provider is not None:
        from temporalio.contrib.opentelemetry import TracingInterceptor

        tracer = provider.get_tracer(_TRACER_NAME)
        _state.append(_Tracing(provider, tracer, TracingInterceptor(tracer)))


def tracer() -> Tracer | None:
    """landed's tracer when tracing is on, else None (callers then make no span at all)."""
    return _state[0].tracer if _state else None


def interceptor() -> TracingInterceptor | None:
    """The process's Temporal tracing interceptor when tracing is on."""
    return _state[0].interceptor if _state else None


def shutdown(timeout_ms: int = 10_000) -> None:
    """Export what is buffered, then stop: a process calls it before it exits."""
    if not _state:
        return
    provider = _state.pop().provider
    _state.clear()
    provider.force_flush(timeout_millis=timeout_ms)
    provider.shutdown()
