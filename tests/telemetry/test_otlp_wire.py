"""The real OTLP exporters, configured only by OTEL_* variables, to receivers on 127.0.0.1:
HTTP (/v1/traces) and gRPC (TraceService), each decoding what it got with opentelemetry-proto."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from datetime import UTC, datetime

import pytest
from helpers.otel import Received, grpc_receiver, http_receiver

from landed.receipts.model import Cost, LandedExtension, Receipt
from landed.telemetry import tracing
from landed.telemetry.spans import act_span, note_act, settle_span
from landed.util.redact import Redactor

pytestmark = pytest.mark.slow

CANARY = "canary-7f3e9a21c4b8"

Receiver = Callable[[], AbstractContextManager[tuple[str, Received]]]


def _receipt() -> Receipt:
    return Receipt(
        task_id="wire-1",
        owner="agent-w",
        claimed_status="done",
        report=f"Published to https://bot:{CANARY}@example.test/hooks",
        verdict="verified",
        cost=Cost(input_tokens=7, output_tokens=3, usd=0.002),
        settled_at=datetime(2026, 1, 1, tzinfo=UTC),
        landed=LandedExtension.model_validate(
            {"attempt": 1, "rung": "verified", "proof_level": "P3", "meets_bar": True}
        ),
    )


@pytest.mark.parametrize(
    ("protocol", "receiver"), [("http/protobuf", http_receiver), ("grpc", grpc_receiver)]
)
def test_spans_reach_an_otlp_receiver(
    protocol: str, receiver: Receiver, monkeypatch: pytest.MonkeyPatch
) -> None:
    with receiver() as (endpoint, received):
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint)
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_PROTOCOL", protocol)
        monkeypatch.setenv("OTEL_SERVICE_NAME", "landed-wire")
        monkeypatch.setenv("OTEL_RESOURCE_ATTRIBUTES", "deployment.environment=test")
        assert tracing.configure("landed-runner") is not None
        with act_span("agent-w", "test.publish", "wire-1", 1) as span:
            note_act(span, "done", Cost(input_tokens=7, output_tokens=3))
        with settle_span(_receipt(), Redactor()):
            pass
        tracing.shutdown()  # flushes the batch
        spans = received.spans()
    assert sorted(span.name for _, span in spans) == ["invoke_agent agent-w", "landed.settle"]
    for resource, _ in spans:
        assert resource["service.name"] == "landed-wire"
        assert resource["deployment.environment"] == "test"
    (settle,) = [span for _, span in spans if span.name == "landed.settle"]
    attrs = {a.key: a.value for a in settle.attributes}
    assert attrs["landed.verdict"].string_value == "verified"
    assert attrs["landed.meets_bar"].bool_value is True
    assert attrs["gen_ai.usage.input_tokens"].int_value == 7
    (event,) = settle.events
    body = {a.key: a.value for a in event.attributes}["landed.receipt.json"].string_value
    assert "[redacted]" in body
    assert all(CANARY.encode() not in raw for raw in received.raw)


def test_the_role_name_is_the_service_when_otel_names_none(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with http_receiver() as (endpoint, received):
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", f"{endpoint}/v1/traces")
        assert tracing.configure("landed-verifier") is not None
        with act_span(None, "test.rows", "wire-2", 2):
            pass
        tracing.shutdown()
        ((resource, span),) = received.spans()
    assert resource["service.name"] == "landed-verifier"
    assert span.name == "invoke_agent test.rows"  # no owner: the act's name


async def test_client_connect_traces_where_otel_names_an_endpoint(
    temporal_dev: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    import landed

    plain = await landed.Client.connect(temporal_dev)
    assert tracing.interceptor() is None
    assert not plain.temporal.config(active_config=True)["interceptors"]
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:9")
    traced = await landed.Client.connect(temporal_dev)
    assert tracing.interceptor() is not None
    assert traced.temporal.config(active_config=True)["interceptors"] == [tracing.interceptor()]
