"""OpenTelemetry spans of finished requests, exported over OTLP (HTTP/protobuf).

Imported only when an OTLP endpoint is configured (``setup.py``): the SDK
costs cold start, and ``edgeproxy[otel]`` installs it. A request becomes a
SERVER span ``{operation} {model}`` with one CLIENT child per attempt
``{operation} {upstream_model}``, each with its recorded start and end. The
batch span processor exports from its own thread, off the request path;
``flush()`` (a Lambda invocation's end) waits for what is pending.
"""

from __future__ import annotations

from opentelemetry import trace as trace_api
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter
from opentelemetry.trace import SpanKind, Status, StatusCode

from edgeproxy.service.trace import Trace
from edgeproxy.service.tracing.attributes import (
    attempt_attributes,
    attempt_end,
    operation_name,
    request_attributes,
)
from edgeproxy.service.tracing.span import RequestSpan

FLUSH_TIMEOUT_MS = 2000


def _ns(seconds: float) -> int:
    return int(seconds * 1_000_000_000)


class OtelTracer:
    """Spans through an SDK ``TracerProvider`` of its own (the global one is left alone)."""

    enabled = True

    def __init__(
        self,
        endpoint: str,
        service_name: str = "edgeproxy",
        exporter: SpanExporter | None = None,
    ) -> None:
        self._provider = TracerProvider(resource=Resource.create({"service.name": service_name}))
        self._provider.add_span_processor(
            BatchSpanProcessor(exporter or OTLPSpanExporter(endpoint=endpoint))
        )
        self._tracer = self._provider.get_tracer("edgeproxy")

    def export(self, span: RequestSpan, trace: Trace) -> None:
        ended = span.ended_at if span.ended_at is not None else span.started_at
        root = self._tracer.start_span(
            f"{operation_name(span.operation)} {span.model}",
            kind=SpanKind.SERVER,
            start_time=_ns(span.started_at),
            attributes=request_attributes(span, trace),
        )
        if span.error_type is not None:
            root.set_status(Status(StatusCode.ERROR, span.error_type))
        parent = trace_api.set_span_in_context(root)
        for number, record in enumerate(trace.attempts, start=1):
            attrs = attempt_attributes(span, trace, record, number)
            name = f"{operation_name(span.operation)} {attrs.get('gen_ai.request.model', record.model)}"
            child = self._tracer.start_span(
                name,
                context=parent,
                kind=SpanKind.CLIENT,
                start_time=_ns(record.started_at),
                attributes=attrs,
            )
            if record.error_kind is not None:
                child.set_status(Status(StatusCode.ERROR, record.error_kind))
            child.end(end_time=_ns(attempt_end(span, trace, record)))
        root.end(end_time=_ns(ended))

    def flush(self) -> None:
        self._provider.force_flush(FLUSH_TIMEOUT_MS)

    def shutdown(self) -> None:
        self._provider.shutdown()
