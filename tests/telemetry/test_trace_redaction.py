"""Traces carry nothing a receipt would not. With tracing on, Temporal's own RunActivity spans
record every exception an activity raises (its message and stack trace, once per attempt) and
the workflow's CompleteWorkflow span records a failed workflow's; each leaves the process only
through the receipt's redaction, its type still readable. Checked on the bytes an OTLP/HTTP
receiver on 127.0.0.1 gets, over a real dev server."""

from __future__ import annotations

import secrets
import uuid
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from helpers.otel import Received, http_receiver
from helpers.roles import run_roles
from helpers.sor import make_rows_db, rows_task
from temporalio import activity, workflow
from temporalio.client import WorkflowFailureError
from temporalio.common import RetryPolicy
from temporalio.worker import Worker

from landed.telemetry import tracing
from landed.temporal.plugin import connect

pytestmark = pytest.mark.slow


def _leaky_text() -> tuple[str, tuple[str, str]]:
    """An error text holding a provider token and a DSN's password, made fresh per test (so
    neither is in any source line a stack trace quotes); the text and the two secrets."""
    token = "ghp_" + secrets.token_hex(18)
    password = f"pw{secrets.token_hex(8)}"
    text = f"push rejected for token {token} via postgresql://app:{password}@db.internal/orders"
    return text, (token, password)


def _check_wire(received: Received, hidden: tuple[str, ...], span: str, kind: str) -> None:
    """No exported byte holds a hidden value; every ``span`` records its exception redacted,
    with ``kind`` (the exception's type) still in it."""
    for value in hidden:
        assert all(value.encode() not in raw for raw in received.raw), f"{value!r} was exported"
    found = [s for _, s in received.spans() if s.name == span]
    assert found, sorted({s.name for _, s in received.spans()})
    for s in found:
        (event,) = [e for e in s.events if e.name == "exception"]
        attrs = {a.key: a.value.string_value for a in event.attributes}
        assert kind in attrs["exception.type"] + attrs["exception.message"], attrs
        assert "[redacted]" in attrs["exception.message"], attrs
        assert "[redacted]" in attrs["exception.stacktrace"], attrs
        assert "[redacted]" in s.status.message and kind in s.status.message, s.status.message


def _traced(monkeypatch: pytest.MonkeyPatch, endpoint: str) -> None:
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint)
    assert tracing.configure("landed-test") is not None


async def test_an_act_that_raises_leaves_its_secrets_out_of_every_span(
    temporal_dev: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    text, hidden = _leaky_text()
    db = make_rows_db(tmp_path / "rows.db")
    task_id = f"leaky-{uuid.uuid4().hex[:8]}"
    task = rows_task(task_id, db, expect=3, batch=task_id)
    task["act"] = {"name": "test.leaky_raise", "input": {"error": text}}
    with http_receiver() as (endpoint, received):
        _traced(monkeypatch, endpoint)
        async with run_roles(
            temporal_dev,
            tmp_path,
            credentials={"rows-db": f"sqlite:///{db}"},
            sources={"rows-db": {"url": f"sqlite:///{db}"}},
            acts=("helpers.acts", "helpers.leaky_acts"),
        ) as roles:
            receipt = await roles.client.run(task)
        tracing.shutdown()  # flushes the batch to the receiver
    assert receipt.verdict != "verified"
    assert receipt.landed is not None and "[redacted]" in str(receipt.landed.act_error)
    _check_wire(received, hidden, "RunActivity:landed.act", "RuntimeError")


@activity.defn(name="test.leaky_raise")
async def _leaky_activity(text: str) -> None:
    raise RuntimeError(text)


@workflow.defn(name="LeakyActivity", sandboxed=False)
class _LeakyWorkflow:
    @workflow.run
    async def run(self, text: str) -> None:
        await workflow.execute_activity(
            _leaky_activity,
            text,
            start_to_close_timeout=timedelta(seconds=30),
            retry_policy=RetryPolicy(
                initial_interval=timedelta(milliseconds=50), maximum_attempts=2
            ),
        )


async def test_any_activity_on_landed_s_plugin_exports_its_exception_redacted(
    temporal_dev: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The SDK's interceptor records what an activity raises, whoever wrote it: an application
    whose worker goes through landed's plugin gets the same redaction as landed's roles, on the
    RunActivity span of each attempt and on the failed workflow's CompleteWorkflow span."""
    text, hidden = _leaky_text()
    queue = f"leaky-{uuid.uuid4().hex[:8]}"
    with http_receiver() as (endpoint, received):
        _traced(monkeypatch, endpoint)
        client = await connect(identity=f"app@{queue}", address=temporal_dev)
        worker: Any = Worker(
            client, task_queue=queue, workflows=[_LeakyWorkflow], activities=[_leaky_activity]
        )
        async with worker:
            with pytest.raises(WorkflowFailureError):
                await client.execute_workflow(_LeakyWorkflow.run, text, id=queue, task_queue=queue)
        tracing.shutdown()
    _check_wire(received, hidden, "RunActivity:test.leaky_raise", "RuntimeError")
    attempts = [s for _, s in received.spans() if s.name == "RunActivity:test.leaky_raise"]
    assert len(attempts) == 2  # one span, one exception event, per attempt
    (done,) = [s for _, s in received.spans() if s.name == "CompleteWorkflow:LeakyActivity"]
    assert [e.name for e in done.events] == ["exception"]


def test_only_exception_texts_and_the_status_are_rewritten() -> None:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    from opentelemetry.trace import Status, StatusCode

    from landed.telemetry.trace_redact import redacted

    text, (token, password) = _leaky_text()
    exported = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(tracing.redacting(SimpleSpanProcessor(exported)))
    tracer = provider.get_tracer("t")
    with tracer.start_as_current_span("quiet") as quiet:
        quiet.add_event("note", {"detail": "token=kept-as-is"})
    with pytest.raises(ValueError), tracer.start_as_current_span("loud") as loud:
        loud.set_status(Status(StatusCode.ERROR, f"ValueError: {text}"))
        loud.add_event("note", {"detail": "token=kept-as-is"})
        raise ValueError(text)
    first, second = exported.get_finished_spans()
    assert redacted(first) is first  # nothing to redact: the span itself, not a copy
    dumped = second.to_json()
    assert token not in dumped and password not in dumped
    (_note, event) = second.events
    assert dict(_note.attributes or {}) == {"detail": "token=kept-as-is"}  # not an exception
    attrs = dict(event.attributes or {})
    assert attrs["exception.type"] == "ValueError"
    assert str(attrs["exception.message"]).startswith("push rejected for token [redacted]")
    assert second.status.description is not None
    assert second.status.description.startswith("ValueError: push rejected for token [redacted]")
    assert (second.context, second.parent, second.start_time, second.end_time) == (
        loud.get_span_context(),
        None,
        loud.start_time,
        loud.end_time,  # type: ignore[attr-defined]
    )
