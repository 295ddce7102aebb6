"""One task, one trace: the span tree across the three roles, the receipt on the settle span,
one log line per task event carrying the trace id, and nothing more on replay."""

from __future__ import annotations

import hashlib
import io
import json
import uuid
from pathlib import Path
from typing import Any

import pytest
from helpers.otel import in_memory_tracing, tree
from helpers.roles import rows_roles, run_roles
from helpers.sor import Site, make_rows_db, publish_task, rows_task
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from temporalio.client import WorkflowHistory
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.worker import Replayer

from landed.ledger.base import canonical_json
from landed.receipts.model import Receipt
from landed.telemetry import logs
from landed.telemetry.spans import RECEIPT_EVENT
from landed.temporal.plugin import landed_plugin, strict_workflow_runner
from landed.workflows.agent_task import AgentTask

pytestmark = pytest.mark.slow


def _leaf(name: str) -> list[Any]:
    return [name, []]


def _activity(name: str, *inside: list[Any]) -> list[Any]:
    return [f"StartActivity:landed.{name}", [[f"RunActivity:landed.{name}", list(inside)]]]


def _trace_of(spans: list[ReadableSpan], task_id: str) -> int:
    (run,) = [
        s
        for s in spans
        if s.name == "RunWorkflow:AgentTask"
        and (s.attributes or {}).get("temporalWorkflowID") == task_id
    ]
    assert run.context is not None
    return run.context.trace_id


def _in(span: ReadableSpan, trace_id: int) -> bool:
    return span.context is not None and span.context.trace_id == trace_id


def _named(spans: list[ReadableSpan], trace_id: int, name: str) -> ReadableSpan:
    (span,) = [s for s in spans if s.name == name and _in(s, trace_id)]
    return span


def _check_act_and_reads(spans: list[ReadableSpan], trace_id: int) -> None:
    act = _named(spans, trace_id, "invoke_agent agent-a").attributes or {}
    assert act["gen_ai.operation.name"] == "invoke_agent"
    assert act["gen_ai.agent.name"] == "agent-a"
    assert (act["gen_ai.usage.input_tokens"], act["gen_ai.usage.output_tokens"]) == (100, 20)
    assert act["landed.cost.usd"] == 0.01
    reads = [s for s in spans if s.name == "landed.read record" and _in(s, trace_id)]
    # The pre-read, the read-back and its confirmation after a quiet interval.
    phases = [(s.attributes or {})["landed.phase"] for s in reads]
    assert phases == ["before", "after", "after"]
    after = reads[1].attributes or {}
    assert after["landed.source"] == "rows-db"
    assert after["landed.expectation"] == "count(3)"
    assert after["landed.outcome"] == "pass"
    assert after["landed.duration_ms"] >= 0


def _check_settle(spans: list[ReadableSpan], trace_id: int, receipt: Receipt) -> None:
    settle = _named(spans, trace_id, "landed.settle")
    attrs = settle.attributes or {}
    assert receipt.landed is not None
    assert attrs["landed.task.id"] == receipt.task_id
    assert attrs["landed.verdict"] == attrs["landed.rung"] == "verified"
    assert attrs["landed.proof_level"] == receipt.landed.proof_level
    assert attrs["landed.meets_bar"] is True
    assert attrs["landed.key_id"] == receipt.landed.key_id
    assert attrs["landed.receipt.sha256"] == hashlib.sha256(canonical_json(receipt)).hexdigest()
    (event,) = [e for e in settle.events if e.name == RECEIPT_EVENT]
    body = json.loads(str((event.attributes or {})["landed.receipt.json"]))
    assert body["task_id"] == receipt.task_id and body["verdict"] == "verified"


async def _replay_makes_no_span(exported: InMemorySpanExporter, history: WorkflowHistory) -> None:
    """Replaying the recorded history (shared and strict sandbox) makes no span at all."""
    before = len(exported.get_finished_spans())
    for replayer in (
        Replayer(workflows=[AgentTask], plugins=[landed_plugin()]),
        Replayer(
            workflows=[AgentTask],
            data_converter=pydantic_data_converter,
            workflow_runner=strict_workflow_runner(),
            plugins=[landed_plugin()],
        ),
    ):
        await replayer.replay_workflow(history)
    assert len(exported.get_finished_spans()) == before


def _check_logs(text: str, task_id: str, trace_id: int) -> None:
    events = [json.loads(line) for line in text.splitlines()]
    mine = [e for e in events if e["task_id"] == task_id]
    assert [(e["event"], e["role"], e["attempt"]) for e in mine] == [
        ("read", "verifier", 1),
        ("acted", "actor", 1),
        ("read", "verifier", 1),
        ("read", "verifier", 1),  # the confirmation read
        ("settled", "runner", 1),
    ]
    assert {e["trace_id"] for e in mine} == {format(trace_id, "032x")}
    assert mine[-1]["verdict"] == "verified"


async def test_one_trace_carries_the_receipt_and_replays_without_spans(
    temporal_dev: str, tmp_path: Path
) -> None:
    db = make_rows_db(tmp_path / "rows.db")
    task_id = f"traced-{uuid.uuid4().hex[:8]}"
    stream = io.StringIO()
    logs.configure(stream, env={"LANDED_LOG_FORMAT": "json"})
    with in_memory_tracing() as exported:
        # max_cached_workflows=0 (the helper's default): every workflow task replays the run
        # from its start, so a span made during replay would show up twice here.
        async with rows_roles(temporal_dev, tmp_path, db) as roles:
            receipt = await roles.client.run(
                rows_task(task_id, db, expect=3, batch=task_id, write=3)
            )
            history = await roles.temporal.get_workflow_handle(task_id).fetch_history()
        spans = list(exported.get_finished_spans())
        trace_id = _trace_of(spans, task_id)
        assert receipt.verdict == "verified"
        # Temporal's interceptor parents each workflow-side span (zero length, made once, never
        # on replay) on the client's start; each activity's run is a child of its start.
        assert tree(spans, trace_id) == [
            [
                "StartWorkflow:AgentTask",
                [
                    _leaf("RunWorkflow:AgentTask"),
                    _activity("plan"),
                    _activity("verify", _leaf("landed.read record")),  # the pre-read
                    _activity("fleet_gate"),  # the fleet's switch, read before the act's claim
                    _activity("claim"),
                    _activity("act", _leaf("invoke_agent agent-a")),
                    _activity("verify", _leaf("landed.read record")),  # the read-back
                    _activity("verify", _leaf("landed.read record")),  # the confirmation read
                    _activity("settle", _leaf("landed.settle")),
                    _leaf("CompleteWorkflow:AgentTask"),
                ],
            ]
        ]
        _check_act_and_reads(spans, trace_id)
        _check_settle(spans, trace_id, receipt)
        await _replay_makes_no_span(exported, history)
    _check_logs(stream.getvalue(), task_id, trace_id)


async def test_a_secret_in_a_source_url_never_reaches_a_span(
    temporal_dev: str, tmp_path: Path
) -> None:
    canary = f"canary{uuid.uuid4().hex}"
    site = Site().start()
    secret_url = site.url.replace("http://", f"http://landed:{canary}@")
    task_id = f"canary-{uuid.uuid4().hex[:8]}"
    try:
        with in_memory_tracing() as exported:
            async with run_roles(
                temporal_dev,
                tmp_path,
                credentials={"site": secret_url},
                sources={"site": {"url": secret_url}},
            ) as roles:
                # The act echoes its credential (the URL with the canary) in its report.
                task = publish_task(task_id, task_id)
                task["act"]["input"]["echo_credential"] = True
                receipt = await roles.client.run(task)
            spans = list(exported.get_finished_spans())
    finally:
        site.stop()
    trace_id = _trace_of(spans, task_id)
    mine = [s for s in spans if _in(s, trace_id)]
    assert receipt.verdict == "verified", receipt
    (settle,) = [s for s in mine if s.name == "landed.settle"]
    assert "[redacted]" in settle.to_json()  # the echo, redacted
    assert all(canary not in s.to_json() for s in spans)
