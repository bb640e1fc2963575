"""Metrics a long-lived process can be scraped for: the protocol, its no-op and its builder.

On Lambda the counts go out as CloudWatch EMF (``telemetry.py``); a process
under uvicorn on a container platform serves ``GET /metrics`` instead, in
Prometheus' text format, when ``EDGEPROXY_METRICS=on``. The events are the
ones the request log and the EMF counts already see: a finished request's
record (``observe``), each store call (``store_call``), circuit transitions
(``count``, as ``Telemetry``). ``prometheus.py`` (here) imports ``prometheus_client``
and is loaded only when metrics are on.
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
    return PrometheusMetrics()
