"""The spans landed adds inside Temporal's: the act (GenAI semantic conventions), each probe
reading, and the settled receipt. Each helper makes no span at all when tracing is off.

Only names, labels, outcomes and figures go on a span, never a probe's evidence or message;
the one exception, the receipt itself, goes through the same redactor as evidence and is cut
at ``RECEIPT_EVENT_MAX_BYTES``.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext

from opentelemetry.trace import Span, SpanKind, Status, StatusCode, Tracer
from opentelemetry.util.types import AttributeValue

from landed.ledger.base import canonical_json
from landed.probes.contract import Observation
from landed.receipts.model import Cost, Receipt
from landed.telemetry.tracing import tracer
from landed.util.redact import Redactor

__all__ = [
    "RECEIPT_EVENT",
    "RECEIPT_EVENT_MAX_BYTES",
    "act_span",
    "note_act",
    "note_reading",
    "reading_span",
    "settle_span",
]

#: The receipt JSON on the settle span's event is cut at this many bytes (UTF-8), so one
#: receipt with long evidence cannot outgrow an OTLP collector's message limit; the event then
#: says ``landed.receipt.truncated = true`` and the ledger keeps the whole receipt.
RECEIPT_EVENT_MAX_BYTES = 16 * 1024
RECEIPT_EVENT = "landed.receipt"

Attrs = dict[str, AttributeValue]
SpanScope = AbstractContextManager[Span | None]

# What every helper returns while tracing is off: one shared, reusable no-op, so an untraced
# task pays a function call per span, not a generator.
_OFF: SpanScope = nullcontext(None)


def _fail(span: Span, exc: BaseException) -> None:
    # The type only: an act's or probe's error text can quote a credential.
    span.set_status(Status(StatusCode.ERROR, type(exc).__name__))


def act_span(owner: str | None, act: str, task_id: str, attempt: int) -> SpanScope:
    """One act attempt as an agent invocation (``invoke_agent {gen_ai.agent.name}``)."""
    found = tracer()
    if found is None:
        return _OFF
    agent = owner or act
    attrs: Attrs = {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.agent.name": agent,
        "landed.task.id": task_id,
        "landed.attempt": attempt,
        "landed.act.name": act,
    }
    return _span(found, f"invoke_agent {agent}", attrs)


@contextmanager
def _span(found: Tracer, name: str, attrs: Attrs) -> Iterator[Span | None]:
    with found.start_as_current_span(
        name,
        kind=SpanKind.INTERNAL,
        attributes=attrs,
        record_exception=False,
        set_status_on_exception=False,
    ) as span:
        try:
            yield span
        except BaseException as exc:
            _fail(span, exc)
            raise


def _cost_attrs(cost: Cost | None) -> Attrs:
    attrs: Attrs = {}
    if cost is None:
        return attrs
    if cost.input_tokens is not None:
        attrs["gen_ai.usage.input_tokens"] = cost.input_tokens
    if cost.output_tokens is not None:
        attrs["gen_ai.usage.output_tokens"] = cost.output_tokens
    if cost.usd is not None:
        attrs["landed.cost.usd"] = cost.usd
    return attrs


def note_act(span: Span | None, claimed_status: str, cost: Cost | None) -> None:
    """What the act reported: its claim (a word, never a verdict) and what it spent."""
    if span is not None:
        span.set_attributes({"landed.claimed_status": claimed_status, **_cost_attrs(cost)})


def reading_span(task_id: str, attempt: int, phase: str, step: int) -> SpanScope:
    """One probe reading by the verifier; ``note_reading`` adds what it observed."""
    found = tracer()
    if found is None:
        return _OFF
    attrs: Attrs = {
        "landed.task.id": task_id,
        "landed.attempt": attempt,
        "landed.phase": phase,
        "landed.step": step,
    }
    return _span(found, "landed.read", attrs)


def note_reading(span: Span | None, observation: Observation, *, refused: bool) -> None:
    if span is None:
        return
    span.update_name(f"landed.read {observation.kind}")
    attrs: Attrs = {
        "landed.probe.kind": observation.kind,
        "landed.expectation": observation.expectation,
        "landed.outcome": observation.outcome.value,
        "landed.duration_ms": observation.duration_ms,
        "landed.refused": refused,
    }
    if observation.source is not None:
        attrs["landed.source"] = observation.source
    span.set_attributes(attrs)


def _receipt_attrs(receipt: Receipt, body: bytes) -> Attrs:
    ext = receipt.landed
    attrs: Attrs = {
        "landed.task.id": receipt.task_id,
        "landed.attempt": ext.attempt if ext is not None else 1,
        "landed.receipt.sha256": hashlib.sha256(body).hexdigest(),
        **_cost_attrs(receipt.cost),
    }
    facts = {
        "landed.verdict": receipt.verdict,
        "landed.rung": ext.rung if ext is not None else None,
        "landed.proof_level": getattr(ext, "proof_level", None),
        "landed.meets_bar": getattr(ext, "meets_bar", None),
        "landed.key_id": ext.key_id if ext is not None else None,
    }
    attrs.update({k: v for k, v in facts.items() if isinstance(v, (str, bool))})
    return attrs


def _capped(text: str) -> tuple[str, bool]:
    data = text.encode()
    if len(data) <= RECEIPT_EVENT_MAX_BYTES:
        return text, False
    return data[:RECEIPT_EVENT_MAX_BYTES].decode(errors="ignore"), True


def settle_span(receipt: Receipt, redactor: Redactor) -> SpanScope:
    """The settle step carrying the receipt: its facts as attributes, the whole receipt
    (redacted, capped) as the ``landed.receipt`` event."""
    found = tracer()
    if found is None:
        return _OFF
    return _settle(found, receipt, redactor)


@contextmanager
def _settle(found: Tracer, receipt: Receipt, redactor: Redactor) -> Iterator[Span | None]:
    body = canonical_json(receipt)
    with _span(found, "landed.settle", _receipt_attrs(receipt, body)) as span:
        assert span is not None
        text, cut = _capped(redactor(body.decode()))
        span.add_event(
            RECEIPT_EVENT,
            {"landed.receipt.json": text, "landed.receipt.truncated": cut},
        )
        yield span
