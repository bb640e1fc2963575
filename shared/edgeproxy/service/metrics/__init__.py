"""Metrics a long-lived process can be scraped for: the protocol, its no-op and its builder.

On Lambda the counts go out as CloudWatch EMF (``telemetry.py``); a process
under uvicorn on a container platform serves ``GET /metrics`` instead, in
Prometheus' text format, when ``EDGEPROXY_METRICS=on``. The events are the
ones the request log and the EMF counts already see: a finished request's
record (``observe``), each store call (``store_call``), circuit transitions
(``count``, as ``Telemetry``). ``prometheus.py`` (here) imports ``prometheus_client``
and is loaded only when metrics are on; ``otlp.py`` imports the OpenTelemetry
SDK and is loaded only when, besides, an OTLP endpoint is set.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from edgeproxy.errors import MetricsUnavailable
from edgeproxy.service.telemetry import Telemetry

if TYPE_CHECKING:
    from edgeproxy.service.run import Run
    from edgeproxy.settings import Settings
    from edgeproxy.state.usage_log import RequestRecord


class Metrics(Telemetry, Protocol):
    """A scrapeable registry fed by the gateway's events."""

    def observe(self, record: RequestRecord, run: Run) -> None:
        """Count one finished request (its record, as the request log has it)."""
        ...

    def store_call(self, operation: str, seconds: float, failed: bool) -> None:
        """Time one DynamoDB call, retries included."""
        ...

    def exposition(self) -> tuple[bytes, str]:
        """The registry in Prometheus' text format, and its content type."""
        ...

    def shutdown(self) -> None:
        """Send what is pending (an OTLP export) before the process ends."""
        ...


class Pushed(Protocol):
    """Metrics sent elsewhere as they are fed (``otlp.py``): no exposition of their own."""

    def observe(self, record: RequestRecord, run: Run) -> None: ...
    def store_call(self, operation: str, seconds: float, failed: bool) -> None: ...
    def count(self, name: str, value: float = 1, /, **dimensions: str) -> None: ...
    def shutdown(self) -> None: ...


class Exported:
    """The scrapeable registry, with every event also fed to a pushed copy."""

    def __init__(self, scraped: Metrics, pushed: Pushed) -> None:
        self._scraped = scraped
        self._pushed = pushed

    def observe(self, record: RequestRecord, run: Run) -> None:
        self._scraped.observe(record, run)
        self._pushed.observe(record, run)

    def store_call(self, operation: str, seconds: float, failed: bool) -> None:
        self._scraped.store_call(operation, seconds, failed)
        self._pushed.store_call(operation, seconds, failed)

    def count(self, name: str, value: float = 1, /, **dimensions: str) -> None:
        self._scraped.count(name, value, **dimensions)
        self._pushed.count(name, value, **dimensions)

    def exposition(self) -> tuple[bytes, str]:
        return self._scraped.exposition()

    def shutdown(self) -> None:
        self._pushed.shutdown()


class FanOut:
    """Counts to both the process's telemetry (EMF, or none) and its metrics."""

    def __init__(self, telemetry: Telemetry, metrics: Metrics) -> None:
        self._telemetry = telemetry
        self._metrics = metrics

    def count(self, name: str, value: float = 1, /, **dimensions: str) -> None:
        self._telemetry.count(name, value, **dimensions)
        self._metrics.count(name, value, **dimensions)


def metrics_for(settings: Settings) -> Metrics | None:
    """The process's metrics: None unless ``EDGEPROXY_METRICS`` is on (never on Lambda).

    With an OTLP metrics endpoint set as well, the same metrics are also
    pushed there (``otlp.py``); the SDK is imported only then.

    A gateway asked for metrics that cannot serve them does not start
    (a scrape target that silently answers 404 would look like an outage).
    """
    if not settings.metrics:
        return None
    try:
        from edgeproxy.service.metrics.prometheus import PrometheusMetrics
    except ImportError as exc:
        raise MetricsUnavailable(
            "EDGEPROXY_METRICS is on but prometheus-client is not installed "
            "(pip install 'edgeproxy[metrics]')"
        ) from exc
    scraped = PrometheusMetrics()
    if settings.otlp_metrics_endpoint is None:
        return scraped
    try:
        from edgeproxy.service.metrics.otlp import OtlpMetrics
    except ImportError as exc:
        raise MetricsUnavailable(
            "an OTLP metrics endpoint is set but OpenTelemetry is not installed "
            "(pip install 'edgeproxy[otel]')"
        ) from exc
    pushed = OtlpMetrics(
        settings.otlp_metrics_endpoint,
        settings.trace_service_name,
        settings.otlp_metrics_interval_ms,
    )
    return Exported(scraped, pushed)
