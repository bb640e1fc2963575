"""The tracer the settings ask for: none, OTLP, X-Ray, or both (``runtime.py`` injects it).

Each library is imported here only when its tracer is on, so a gateway with
tracing off never loads OpenTelemetry or the X-Ray SDK. A tracer that cannot
be built (its package is missing) is reported and left out: tracing never
stops the gateway from serving.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from edgeproxy.service.trace import Trace
from edgeproxy.service.tracing.span import NoTracer, RequestSpan, Tracer
from edgeproxy.settings import Settings

logger = logging.getLogger(__name__)


class Tracers:
    """Several tracers as one (OTLP and X-Ray both on)."""

    enabled = True

    def __init__(self, tracers: Sequence[Tracer]) -> None:
        self._tracers = list(tracers)

    def export(self, span: RequestSpan, trace: Trace) -> None:
        for tracer in self._tracers:
            tracer.export(span, trace)

    def flush(self) -> None:
        for tracer in self._tracers:
            tracer.flush()

    def shutdown(self) -> None:
        for tracer in self._tracers:
            tracer.shutdown()


def _otlp(settings: Settings) -> Tracer | None:
    assert settings.otlp_traces_endpoint is not None
    try:
        from edgeproxy.service.tracing.otel import OtelTracer
    except ImportError:
        logger.error(
            "an OTLP endpoint is set but OpenTelemetry is not installed "
            "(pip install 'edgeproxy[otel]'): no traces are exported"
        )
        return None
    return OtelTracer(settings.otlp_traces_endpoint, settings.trace_service_name)


def _xray(settings: Settings) -> Tracer | None:
    try:
        from edgeproxy.service.tracing.xray import XRayTracer
    except ImportError:
        logger.error(
            "EDGEPROXY_XRAY is on but the X-Ray SDK is not installed "
            "(pip install 'edgeproxy[xray]'): no X-Ray subsegments are recorded"
        )
        return None
    return XRayTracer(settings.trace_service_name)


def tracer_for(settings: Settings) -> Tracer:
    """The process's tracer: ``NoTracer`` unless an OTLP endpoint or X-Ray is configured."""
    tracers = [
        tracer
        for tracer in (
            _otlp(settings) if settings.otlp_traces_endpoint else None,
            _xray(settings) if settings.xray else None,
        )
        if tracer is not None
    ]
    if not tracers:
        return NoTracer()
    return tracers[0] if len(tracers) == 1 else Tracers(tracers)
