"""X-Ray subsegments of finished requests, through Powertools' Tracer (Lambda).

Imported only when ``EDGEPROXY_XRAY`` is on (template.yaml's ``XRayTracing``
sets it with ``Tracing: Active``): the X-Ray SDK costs cold start. A request
becomes a subsegment ``{operation} {model}`` of the invocation's segment,
with one ``remote`` subsegment per attempt, named like the OpenTelemetry
spans and carrying the same attributes: a few as annotations (indexed, for
filter expressions: dots become underscores) and all as metadata under
``edgeproxy``. No module is patched (``auto_patch=False``): no HTTP call or
store request is recorded with its URL or body. The SDK sends each
subsegment over UDP to the daemon Lambda runs, so nothing waits for it.
"""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools import Tracer as PowertoolsTracer

from edgeproxy.service.trace import Trace
from edgeproxy.service.tracing.attributes import (
    Attributes,
    attempt_attributes,
    attempt_end,
    operation_name,
    request_attributes,
)
from edgeproxy.service.tracing.span import RequestSpan

# The attributes also put as annotations (X-Ray indexes at most 50 per trace).
ANNOTATED = (
    "gen_ai.request.model",
    "gen_ai.provider.name",
    "edgeproxy.deployment.id",
    "edgeproxy.attempt.number",
    "edgeproxy.failure.class",
    "edgeproxy.stream",
    "error.type",
    "http.response.status_code",
)


def _record(subsegment: Any, attrs: Attributes, started_at: float) -> None:
    subsegment.start_time = started_at
    for key in ANNOTATED:
        if key in attrs:
            subsegment.put_annotation(key.replace(".", "_"), attrs[key])
    subsegment.put_metadata("attributes", dict(attrs), "edgeproxy")


class XRayTracer:
    """Subsegments through the X-Ray recorder Powertools' ``Tracer`` configures."""

    enabled = True

    def __init__(self, service: str = "edgeproxy") -> None:
        self._tracer = PowertoolsTracer(service=service, auto_patch=False)
        self._recorder: Any = self._tracer.provider

    def export(self, span: RequestSpan, trace: Trace) -> None:
        if self._tracer.disabled:
            return
        recorder = self._recorder
        name = f"{operation_name(span.operation)} {span.model}"
        request = recorder.begin_subsegment(name)
        if request is None:
            return  # no segment to hang it on (not in an invocation)
        _record(request, request_attributes(span, trace), span.started_at)
        if span.error_type is not None and (span.status or 500) < 500:
            request.add_error_flag()  # the client's error (4xx)
        elif span.error_type is not None:
            request.add_fault_flag()
        for number, record in enumerate(trace.attempts, start=1):
            attrs = attempt_attributes(span, trace, record, number)
            model = attrs.get("gen_ai.request.model", record.model)
            attempt = recorder.begin_subsegment(
                f"{operation_name(span.operation)} {model}", namespace="remote"
            )
            if attempt is None:
                continue
            _record(attempt, attrs, record.started_at)
            if record.error_kind is not None:
                attempt.add_fault_flag()
            recorder.end_subsegment(attempt_end(span, trace, record))
        recorder.end_subsegment(span.ended_at)

    def flush(self) -> None:
        return None  # each subsegment was sent when it ended

    def shutdown(self) -> None:
        return None
