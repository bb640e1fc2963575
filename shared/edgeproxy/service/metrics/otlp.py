"""``OtlpMetrics``: the metrics ``/metrics`` serves, also pushed over OTLP/HTTP.

Loaded only when metrics are on and an OTLP endpoint is set (``metrics_for``):
the OpenTelemetry SDK and its exporter cost start-up, and ``edgeproxy[otel]``
installs them. The instruments are the Prometheus registry's, under the
conventions' own dotted names and units (``gen_ai.client.token.usage``,
``gen_ai.server.request.duration`` ...), which an OTLP-to-Prometheus
translation turns back into the names ``/metrics`` shows. A periodic reader
exports from its own thread, every ``OTEL_METRIC_EXPORT_INTERVAL`` ms (the
SDK's variable, read by ``Settings``; default 60 s), off the request path; ``shutdown()`` (the
gateway's close) exports what is left. Long-lived processes only: metrics
are never on on Lambda (EMF there), so no invocation waits for an export.
"""

from __future__ import annotations

from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
from opentelemetry.metrics import Histogram
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader
from opentelemetry.sdk.resources import Resource

from edgeproxy.routing.snapshot import CircuitState
from edgeproxy.service.metrics.prometheus import (
    DURATION_BUCKETS,
    STORE_BUCKETS,
    TOKEN_BUCKETS,
    TTFT_BUCKETS,
)
from edgeproxy.service.run import Run
from edgeproxy.service.tracing.attributes import PROVIDERS, operation_name
from edgeproxy.state.usage_log import RequestRecord

SHUTDOWN_TIMEOUT_MS = 2000  # as the spans: a dead collector delays shutdown this much, at most
OPERATION = "gen_ai.operation.name"
MODEL = "gen_ai.request.model"
PROVIDER = "gen_ai.provider.name"
ERROR = "error.type"
DEPLOYMENT = "edgeproxy.deployment"


class OtlpMetrics:
    """An SDK ``MeterProvider`` of its own (the global one is left alone)."""

    def __init__(
        self, endpoint: str, service_name: str = "edgeproxy", interval_ms: int = 60000
    ) -> None:
        reader = PeriodicExportingMetricReader(
            OTLPMetricExporter(endpoint=endpoint), export_interval_millis=interval_ms
        )
        self._provider = MeterProvider(
            metric_readers=[reader],
            resource=Resource.create({"service.name": service_name}),
        )
        meter = self._provider.get_meter("edgeproxy")

        def histogram(name: str, unit: str, doc: str, buckets: tuple[float, ...]) -> Histogram:
            return meter.create_histogram(
                name, unit=unit, description=doc, explicit_bucket_boundaries_advisory=buckets
            )

        self._requests = meter.create_counter(
            "edgeproxy.requests", unit="{request}", description="Finished requests, by outcome"
        )
        self._duration = histogram(
            "gen_ai.server.request.duration", "s", "Request start to its end", DURATION_BUCKETS
        )
        self._ttft = histogram(
            "gen_ai.server.time_to_first_token", "s", "A stream's first content chunk", TTFT_BUCKETS
        )
        self._attempts = histogram(
            "gen_ai.client.operation.duration", "s", "Each upstream attempt", DURATION_BUCKETS
        )
        self._tokens = histogram(
            "gen_ai.client.token.usage", "{token}", "Tokens of each served answer", TOKEN_BUCKETS
        )
        self._cost = meter.create_counter(
            "edgeproxy.cost", unit="USD", description="Spend at the deployment's prices"
        )
        self._circuit = meter.create_gauge(
            "edgeproxy.circuit.state", description="1 for the state this process last wrote"
        )
        self._transitions = meter.create_counter(
            "edgeproxy.circuit.transitions", description="Circuit transitions this process wrote"
        )
        self._continuations = meter.create_counter(
            "edgeproxy.stream.continuations", description="Streams continued after a cut"
        )
        self._anomalies = meter.create_counter(
            "edgeproxy.stream.anomalies", description="Streams answered with an irregular end"
        )
        self._store = histogram(
            "edgeproxy.store.operation.duration", "s", "Each DynamoDB call", STORE_BUCKETS
        )

    def observe(self, record: RequestRecord, run: Run) -> None:
        """Count a finished request, its attempts, and (when served) its tokens and cost."""
        operation = operation_name(record.operation)
        error = record.failure_class or ""
        base = {OPERATION: operation, MODEL: record.model}
        self._requests.add(1, {**base, "outcome": record.outcome, ERROR: error})
        self._duration.record(record.latency_ms / 1000, {**base, ERROR: error})
        if record.ttft_ms is not None:
            self._ttft.record(record.ttft_ms / 1000, base)
        config = run.config
        for attempt in run.trace.attempts:
            dep = config.deployment(attempt.deployment_id)
            provider = PROVIDERS.get(dep.provider, dep.provider.value) if dep else ""
            attrs = {
                OPERATION: operation,
                PROVIDER: provider,
                MODEL: attempt.model,
                DEPLOYMENT: attempt.deployment_id,
                ERROR: attempt.error_class or attempt.error_kind or "",
            }
            self._attempts.record(attempt.latency_ms / 1000, attrs)
        served = config.deployment(record.deployment) if record.deployment else None
        if served is None or record.outcome != "success":
            return
        provider = PROVIDERS.get(served.provider, served.provider.value)
        attrs = {**base, PROVIDER: provider, DEPLOYMENT: served.id}
        for kind, tokens in (("input", record.prompt_tokens), ("output", record.completion_tokens)):
            self._tokens.record(tokens, {**attrs, "gen_ai.token.type": kind})
        self._cost.add(record.cost_usd, {MODEL: record.model, DEPLOYMENT: served.id})

    def count(self, name: str, value: float = 1, /, **dimensions: str) -> None:
        """The EMF counts that have a metric here (circuits, continuations, anomalies)."""
        if name == "CircuitTransitions":
            dep, entered = dimensions.get("deployment", ""), dimensions.get("to_state", "")
            self._transitions.add(value, {DEPLOYMENT: dep, "state": entered})
            for state in CircuitState:
                attrs = {DEPLOYMENT: dep, "state": state.value}
                self._circuit.set(1 if state.value == entered else 0, attrs)
        elif name == "StreamContinuations":
            self._continuations.add(value)
        elif name == "StreamAnomalies":
            dep, anomaly = dimensions.get("deployment", ""), dimensions.get("anomaly", "")
            self._anomalies.add(value, {DEPLOYMENT: dep, "anomaly": anomaly})

    def store_call(self, operation: str, seconds: float, failed: bool) -> None:
        """Time one store call (retries included)."""
        attrs = {"operation": operation, "outcome": "error" if failed else "ok"}
        self._store.record(seconds, attrs)

    def shutdown(self) -> None:
        """Export what is pending and stop the reader's thread."""
        self._provider.shutdown(timeout_millis=SHUTDOWN_TIMEOUT_MS)
