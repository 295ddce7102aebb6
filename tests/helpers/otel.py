"""Tracing for tests: an in-memory exporter installed as landed's tracing, the span tree of one
trace, and OTLP receivers on 127.0.0.1 (HTTP /v1/traces and a gRPC TraceService) built from
opentelemetry-proto, so the real exporters are tested over the wire."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from concurrent import futures
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import grpc
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2, trace_service_pb2_grpc
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from landed.telemetry import tracing

__all__ = ["Received", "grpc_receiver", "http_receiver", "in_memory_tracing", "tree"]

# The largest export a receiver accepts: read bounded before it is buffered.
_MAX_BODY = 8 * 1024 * 1024


@contextmanager
def in_memory_tracing() -> Iterator[InMemorySpanExporter]:
    """landed's tracing on for the block, every span ended kept in memory as it would be
    exported (through the redaction landed's own exporter sits behind)."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(tracing.redacting(SimpleSpanProcessor(exporter)))
    tracing.install(provider)
    try:
        yield exporter
    finally:
        tracing.install(None)
        provider.shutdown()


def tree(spans: list[ReadableSpan], trace_id: int) -> list[Any]:
    """The trace's spans as nested [name, [children...]] lists, children in start order."""
    mine = [s for s in spans if s.context is not None and s.context.trace_id == trace_id]
    ids = {s.context.span_id for s in mine if s.context is not None}

    def children(parent: int | None) -> list[Any]:
        kids = [
            s
            for s in mine
            if (s.parent.span_id if s.parent is not None and s.parent.span_id in ids else None)
            == parent
        ]
        kids.sort(key=lambda s: (s.start_time or 0, s.name))
        return [[s.name, children(s.context.span_id if s.context else None)] for s in kids]

    return children(None)


class Received:
    """What a receiver was sent: every ExportTraceServiceRequest, decoded."""

    def __init__(self) -> None:
        self.requests: list[trace_service_pb2.ExportTraceServiceRequest] = []
        self.raw: list[bytes] = []
        self.lock = threading.Lock()

    def add(self, body: bytes) -> None:
        request = trace_service_pb2.ExportTraceServiceRequest.FromString(body)
        with self.lock:
            self.raw.append(body)
            self.requests.append(request)

    def spans(self) -> list[tuple[dict[str, Any], Any]]:
        """(resource attributes, span) for every span received."""
        out = []
        with self.lock:
            for request in self.requests:
                for rs in request.resource_spans:
                    resource = {a.key: a.value.string_value for a in rs.resource.attributes}
                    for ss in rs.scope_spans:
                        out.extend((resource, span) for span in ss.spans)
        return out


@contextmanager
def http_receiver() -> Iterator[tuple[str, Received]]:
    """An OTLP/HTTP receiver; yields its base URL (the exporter adds /v1/traces)."""
    received = Received()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            if self.path != "/v1/traces" or not 0 < length <= _MAX_BODY:
                self.send_response(404 if self.path != "/v1/traces" else 413)
                self.end_headers()
                return
            received.add(self.rfile.read(length))
            body = trace_service_pb2.ExportTraceServiceResponse().SerializeToString()
            self.send_response(200)
            self.send_header("Content-Type", "application/x-protobuf")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            return None

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", received
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


class _TraceService(trace_service_pb2_grpc.TraceServiceServicer):
    def __init__(self, received: Received) -> None:
        self._received = received

    def Export(self, request: Any, context: Any) -> Any:
        self._received.add(request.SerializeToString())
        return trace_service_pb2.ExportTraceServiceResponse()


@contextmanager
def grpc_receiver() -> Iterator[tuple[str, Received]]:
    """An OTLP/gRPC receiver (TraceService); yields its http:// endpoint (plaintext)."""
    received = Received()
    server = grpc.server(
        futures.ThreadPoolExecutor(max_workers=2),
        options=[("grpc.max_receive_message_length", _MAX_BODY)],
    )
    trace_service_pb2_grpc.add_TraceServiceServicer_to_server(_TraceService(received), server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    try:
        yield f"http://127.0.0.1:{port}", received
    finally:
        server.stop(grace=None).wait(5)
