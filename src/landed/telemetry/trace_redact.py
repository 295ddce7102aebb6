"""Spans leave the process carrying nothing a receipt would not.

Temporal's ``TracingInterceptor`` records every exception an activity raises on its
``RunActivity`` span, once per attempt: the exception's message and its stack trace as an
``exception`` event, and ``Type: message`` as the span's status. landed's own spans carry the
type alone, but the SDK's spans, and any other span an application's code records an exception
on, carry the text. Every span this process exports therefore passes through the receipt's
redaction (``redact_secret_shapes``, as for a receipt's ``act_error`` and report) on its way to
the exporter: each ``exception.*`` text of every event, and the status description. The
exception's type stays readable; a secret in its text does not leave.
"""

from __future__ import annotations

from opentelemetry.context import Context
from opentelemetry.sdk.trace import Event, ReadableSpan, Span, SpanProcessor
from opentelemetry.trace import Status
from opentelemetry.util.types import AttributeValue

from landed.util.redact import redact_secret_shapes

__all__ = ["RedactingSpanProcessor", "redacted"]

# What the OpenTelemetry semantic conventions name an exception's attributes (exception.message,
# exception.stacktrace, exception.type, ...), on the "exception" event and wherever else.
_EXCEPTION_PREFIX = "exception."


def _event(event: Event) -> Event | None:
    """The event with its exception texts redacted; None when nothing in it changes."""
    attrs = event.attributes or {}
    out: dict[str, AttributeValue] = {}
    changed = False
    for key, value in attrs.items():
        if key.startswith(_EXCEPTION_PREFIX) and isinstance(value, str):
            clean = redact_secret_shapes(value)
            changed = changed or clean != value
            value = clean
        out[key] = value
    return Event(event.name, out, event.timestamp) if changed else None


def redacted(span: ReadableSpan) -> ReadableSpan:
    """``span`` as it may leave the process: the same span when nothing in it needs redacting,
    else a copy whose exception texts and status description are redacted."""
    events = list(span.events)
    changed = False
    for i, event in enumerate(events):
        clean = _event(event)
        if clean is not None:
            events[i], changed = clean, True
    status = span.status
    if status.description:
        description = redact_secret_shapes(status.description)
        if description != status.description:
            status, changed = Status(status.status_code, description), True
    if not changed:
        return span
    return ReadableSpan(
        name=span.name,
        context=span.context,
        parent=span.parent,
        resource=span.resource,
        attributes=span.attributes,
        events=events,
        links=span.links,
        kind=span.kind,
        status=status,
        start_time=span.start_time,
        end_time=span.end_time,
        instrumentation_scope=span.instrumentation_scope,
    )


class RedactingSpanProcessor(SpanProcessor):
    """Hands ``inner`` (the batch processor and its exporter) every ended span redacted.

    It sits in front of the processor that exports, so whatever records an exception (the
    SDK's interceptor, landed, the application) and however it does, the exported bytes hold
    only the redacted text."""

    def __init__(self, inner: SpanProcessor) -> None:
        self._inner = inner

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        self._inner.on_start(span, parent_context=parent_context)

    def _on_ending(self, span: Span) -> None:
        self._inner._on_ending(span)

    def on_end(self, span: ReadableSpan) -> None:
        self._inner.on_end(redacted(span))

    def shutdown(self) -> None:
        self._inner.shutdown()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return self._inner.force_flush(timeout_millis)
