"""Metrics as the service emits them; the sink is injected (Powertools EMF on Lambda)."""

from __future__ import annotations

from typing import Protocol


class Telemetry(Protocol):
    """Counts named events with a few low-cardinality dimensions."""

    def count(self, name: str, value: float = 1, **dimensions: str) -> None:
        """Add ``value`` to the metric ``name`` (dimensions: e.g. failure_class)."""
        ...


class NoTelemetry:
    """Discards every metric (tests, tools)."""

    def count(self, name: str, value: float = 1, **dimensions: str) -> None:
        return None


class PowertoolsTelemetry:
    """Embedded Metric Format through aws-lambda-powertools.

    Dimensions are folded into the metric name (``AttemptFailures.transient``)
    so one flush never mixes dimension sets, which EMF forbids per document.
    """

    def __init__(self, namespace: str, service: str) -> None:
        from aws_lambda_powertools import Metrics
        from aws_lambda_powertools.metrics import MetricUnit

        self._metrics = Metrics(namespace=namespace, service=service)
        self._unit = MetricUnit.Count

    @property
    def metrics(self) -> object:
        """The Powertools ``Metrics`` object (for ``log_metrics`` on the Lambda handler)."""
        return self._metrics

    def count(self, name: str, value: float = 1, **dimensions: str) -> None:
        suffix = ".".join(dimensions[k] for k in sorted(dimensions))
        self._metrics.add_metric(
            name=f"{name}.{suffix}" if suffix else name, unit=self._unit, value=value
        )
