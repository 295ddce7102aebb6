"""Tracing and task logs as the environment configures them, the receipt event's cap and
redaction, and the Web UI link `landed submit --wait` prints; no server, no exporter."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

import pytest
from helpers.otel import in_memory_tracing
from typer.testing import CliRunner

from landed.cli import app
from landed.cli.dev import otlp_env
from landed.cli.submit_watch import step_of, web_ui_base, web_ui_link
from landed.dev.roles import role_env
from landed.dev.server import DevError
from landed.receipts.model import Receipt
from landed.telemetry import logs, tracing
from landed.telemetry.spans import RECEIPT_EVENT, RECEIPT_EVENT_MAX_BYTES, settle_span
from landed.temporal.plugin import landed_plugin
from landed.util.redact import Redactor


@pytest.mark.parametrize(
    ("env", "on"),
    [
        ({}, False),
        ({"OTEL_SERVICE_NAME": "x"}, False),
        ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}, True),
        ({"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://127.0.0.1:4318/v1/traces"}, True),
        ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://h:4318", "OTEL_SDK_DISABLED": "true"}, False),
        ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://h:4318", "OTEL_TRACES_EXPORTER": "none"}, False),
    ],
)
def test_tracing_is_on_only_where_an_endpoint_is_named(env: dict[str, str], on: bool) -> None:
    assert tracing.enabled(env) is on


def test_the_protocol_is_http_protobuf_unless_grpc_is_named() -> None:
    assert tracing.protocol({}) == "http/protobuf"
    assert tracing.protocol({"OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}) == "grpc"
    traces = {"OTEL_EXPORTER_OTLP_PROTOCOL": "grpc", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "grpc"}
    assert tracing.protocol(traces) == "grpc"
    with pytest.raises(tracing.TracingConfigError, match="OTEL_EXPORTER_OTLP_PROTOCOL='http/json'"):
        tracing.protocol({"OTEL_EXPORTER_OTLP_PROTOCOL": "http/json"})


def test_off_means_no_interceptor_and_no_span(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"):
        monkeypatch.delenv(name, raising=False)
    assert tracing.configure("landed-runner") is None
    assert tracing.tracer() is None and landed_plugin().interceptors is None
    with settle_span(Receipt(task_id="t", claimed_status="done"), Redactor()) as span:
        assert span is None
    with in_memory_tracing():
        assert landed_plugin().interceptors == [tracing.interceptor()]


def _event_body(receipt: Receipt, redactor: Redactor) -> tuple[str, bool]:
    with in_memory_tracing() as exported:
        with settle_span(receipt, redactor):
            pass
        (span,) = exported.get_finished_spans()
    (event,) = [e for e in span.events if e.name == RECEIPT_EVENT]
    attrs = event.attributes or {}
    return str(attrs["landed.receipt.json"]), bool(attrs["landed.receipt.truncated"])


def test_the_receipt_event_is_redacted_and_capped() -> None:
    secret = "s3cr3t-ledger-pw"
    report = f"wrote via postgresql://landed:{secret}@db/ledger and {secret} again"
    body, cut = _event_body(
        Receipt(task_id="t", claimed_status="done", report=report), Redactor([secret])
    )
    assert secret not in body and "[redacted]" in body and not cut
    assert json.loads(body)["task_id"] == "t"
    long = Receipt(task_id="t", claimed_status="done", report="é" * RECEIPT_EVENT_MAX_BYTES)
    body, cut = _event_body(long, Redactor())
    assert cut and len(body.encode()) <= RECEIPT_EVENT_MAX_BYTES


def _logged(fmt: str) -> str:
    stream = io.StringIO()
    logs.configure(stream, env={"LANDED_LOG_FORMAT": fmt})
    logs.task_event("settled", role="runner", task_id="a b=c", attempt=2, verdict="verified")
    return stream.getvalue()


def test_task_events_as_json_or_text() -> None:
    line = json.loads(_logged("json"))
    assert line == {
        "event": "settled",
        "role": "runner",
        "task_id": "a b=c",
        "attempt": 2,
        "verdict": "verified",
        "trace_id": None,
    }
    text = _logged("text")
    assert text == (
        'landed settled role="runner" task_id="a b=c" attempt=2 verdict="verified" trace_id=null\n'
    )
    with in_memory_tracing() as exported:
        tracer = tracing.tracer()
        assert tracer is not None
        with tracer.start_as_current_span("x") as span:
            traced = json.loads(_logged("json"))
        assert traced["trace_id"] == format(span.get_span_context().trace_id, "032x")
        assert exported.get_finished_spans()
    with pytest.raises(logs.LogFormatError, match="LANDED_LOG_FORMAT='yaml'"):
        logs.configure(io.StringIO(), env={"LANDED_LOG_FORMAT": "yaml"})
    # A role's own setting (what `landed dev` hands it) comes first.
    both = {"LANDED_LOG_FORMAT": "text", "LANDED_ACTOR_LOG_FORMAT": "json"}
    assert logs.log_format(both, role="actor") == "json"
    assert logs.log_format(both, role="runner") == "text"


def test_web_ui_link() -> None:
    assert web_ui_base("127.0.0.1:7233", {}) == "http://127.0.0.1:8233"
    assert web_ui_base("h:7233", {"LANDED_WEB_UI": "https://ui.example/"}) == "https://ui.example"
    link = web_ui_link("http://127.0.0.1:8233", "default", "task/1", "run-1")
    assert link == "http://127.0.0.1:8233/namespaces/default/workflows/task%2F1/run-1/history"
    assert [step_of(a, acted) for a, acted in [
        ("landed.verify", False), ("landed.act", False), ("landed.verify", True),
        ("landed.settle", True),
    ]] == ["pre-read", "acting", "verifying", None]  # fmt: skip


def test_dev_otlp_reaches_every_role_the_actor_included() -> None:
    envs = otlp_env("http://127.0.0.1:4318", "grpc")
    for role, extra in envs.items():
        env = role_env(role, base={"PATH": "/bin"}, temporal_address="127.0.0.1:7233", extra=extra)
        assert env["OTEL_EXPORTER_OTLP_ENDPOINT"] == "http://127.0.0.1:4318"
        assert env["OTEL_EXPORTER_OTLP_PROTOCOL"] == "grpc"
        assert env["OTEL_SERVICE_NAME"] == f"landed-{role}"
    assert otlp_env(None, "grpc") == {}
    with pytest.raises(DevError, match=re.escape("--otlp '127.0.0.1:4318' is not an http")):
        otlp_env("127.0.0.1:4318", "grpc")


def test_dev_refuses_an_otlp_endpoint_that_is_no_url_before_starting(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        app, ["dev", "--dir", str(tmp_path), "--otlp", "127.0.0.1:4318", "--json"]
    )
    assert result.exit_code == 3
    assert json.loads(result.stdout)["message"].startswith("landed dev: --otlp '127.0.0.1:4318'")
    assert not (tmp_path / "dev.lock").exists()
