"""Metrics as the service emits them; the sink is injected (Powertools EMF on Lambda)."""

from __future__ import annotations

from typing import Protocol


class Telemetry(Protocol):
    """Counts named events with a few low-cardinality dimensions."""

    def count(self, name: str, value: float = 1, /, **dimensions: str) -> None:
        """Add ``value`` to the metric ``name`` (dimensions: e.g. failure_class)."""
        ...


class NoTelemetry:
    """Discards every metric (tests, tools)."""

    def count(self, name: str, value: float = 1, /, **dimensions: str) -> None:
        return None


class PowertoolsTelemetry:
    """CloudWatch metrics in Embedded Metric Format, through aws-lambda-powertools.

    Counts are added up in memory and written by ``flush()`` (the Lambda
    handler calls it once per invocation, the streaming entry once per
    request): one EMF document per dimension set, since one document carries
    one set. Dimensions are low-cardinality by construction: the deployment
    id and public model come from the configuration, ``class`` and
    ``outcome`` from fixed enums; never a caller or a request id.
    """

    def __init__(self, namespace: str, service: str) -> None:
        self._namespace = namespace
        self._service = service
        self._pending: dict[tuple[tuple[str, str], ...], dict[str, float]] = {}

    def count(self, name: str, value: float = 1, /, **dimensions: str) -> None:
        counts = self._pending.setdefault(tuple(sorted(dimensions.items())), {})
        counts[name] = counts.get(name, 0.0) + value

    def flush(self) -> None:
        """Write every pending count to stdout as EMF and start afresh."""
        from aws_lambda_powertools.metrics import EphemeralMetrics, MetricUnit

        pending, self._pending = self._pending, {}
        for dimensions, counts in pending.items():
            metrics = EphemeralMetrics(namespace=self._namespace, service=self._service)
            for key, value in dimensions:
                metrics.add_dimension(name=key, value=value)
            for name, total in counts.items():
                metrics.add_metric(name=name, unit=MetricUnit.Count, value=total)
            metrics.flush_metrics()
