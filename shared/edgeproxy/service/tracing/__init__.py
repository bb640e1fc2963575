"""Traces of requests and their attempts: a protocol, its no-op default, OTLP and X-Ray.

``span.py`` is what the gateway records (no tracing library); ``otel.py``
and ``xray.py`` import theirs only when built (``setup.py``), so a gateway
with tracing off never imports OpenTelemetry or the X-Ray SDK.
"""
