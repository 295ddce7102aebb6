"""What landed's own spans cost a task, with tracing off and on, beside the ledger's own work
on the same receipt (its canonical JSON, which every settle computes).

Per task: one act span, two readings (pre-read and read-back) and the settle span with the
receipt event. "On" is the SDK with a batch processor and an exporter that discards (the
network is not landed's cost); "off" is how every process runs without OTEL_* set.

Target (issue: observability, "off when unset, with no cost"): tracing off adds at most 0.10x
of the receipt's canonical serialization per task. The "on" figure is printed for the record.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime

from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult

from landed.ledger.base import canonical_json
from landed.probes.contract import Observation, Outcome
from landed.receipts.model import Cost, LandedExtension, ProofItem, Receipt
from landed.telemetry import tracing
from landed.telemetry.spans import act_span, note_act, note_reading, reading_span, settle_span
from landed.util.redact import Redactor

TARGET_OFF = 0.10
N = 5_000
ROUNDS = 5


class _Discard(SpanExporter):
    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        return SpanExportResult.SUCCESS


def _receipt() -> Receipt:
    proof = ProofItem(kind="record", ref="rows-db: select count(*)", result="pass", expect=45)
    return Receipt(
        task_id="bench-task",
        owner="agent-a",
        outcome="45 rows of batch b are in the rows table",
        claimed_status="done",
        report="Inserted 45 rows." * 20,
        proof=[proof],
        cost=Cost(input_tokens=1200, output_tokens=300, usd=0.02),
        verdict="verified",
        settled_at=datetime.now(UTC),
        landed=LandedExtension.model_validate(
            {"attempt": 1, "rung": "verified", "proof_level": "P3", "meets_bar": True}
        ),
    )


def _observation() -> Observation:
    return Observation(
        outcome=Outcome.PASS,
        expectation="count(45)",
        kind="record",
        source="rows-db",
        observer="verifier",
        observed_at=datetime.now(UTC),
        duration_ms=1.5,
    )


def _task_spans(receipt: Receipt, observation: Observation, redactor: Redactor) -> None:
    with act_span("agent-a", "test.rows", "bench-task", 1) as span:
        note_act(span, "done", receipt.cost)
    for phase in ("before", "after"):
        with reading_span("bench-task", 1, phase, 0) as span:
            note_reading(span, observation, refused=False)
    with settle_span(receipt, redactor):
        pass


def _best_us(work: Callable[[], object]) -> float:
    best = float("inf")
    for _ in range(ROUNDS):
        start = time.perf_counter()
        for _ in range(N):
            work()
        best = min(best, (time.perf_counter() - start) / N * 1e6)
    return best


def main(argv: list[str] | None = None) -> int:
    receipt, observation, redactor = _receipt(), _observation(), Redactor()
    baseline = _best_us(lambda: canonical_json(receipt))
    tracing.install(None)
    off = _best_us(lambda: _task_spans(receipt, observation, redactor))
    provider = TracerProvider()
    provider.add_span_processor(BatchSpanProcessor(_Discard(), max_queue_size=N * 8))
    tracing.install(provider)
    try:
        on = _best_us(lambda: _task_spans(receipt, observation, redactor))
    finally:
        tracing.shutdown()
    print(f"receipt canonical JSON (baseline): {baseline:8.2f} us/task")
    print(f"landed spans, tracing off:         {off:8.2f} us/task  {off / baseline:6.3f}x baseline")
    print(f"landed spans, tracing on:          {on:8.2f} us/task  {on / baseline:6.3f}x baseline")
    met = off / baseline <= TARGET_OFF
    print(f"target off <= {TARGET_OFF:.2f}x baseline: {'met' if met else 'NOT met'}")
    return 0 if met else 1
