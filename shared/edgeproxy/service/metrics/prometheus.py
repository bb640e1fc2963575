"""``PrometheusMetrics``: the gateway's events in a ``prometheus_client`` registry.

Names and labels follow OpenTelemetry's GenAI semantic conventions where
they have one, as an OTLP-to-Prometheus translation writes them (dots to
underscores, the unit as a suffix): the gateway is a GenAI *server* to its
callers (``gen_ai_server_request_duration_seconds``,
``gen_ai_server_time_to_first_token_seconds``) and a GenAI *client* of its
upstreams (``gen_ai_client_operation_duration_seconds`` per attempt,
``gen_ai_client_token_usage`` per served answer), with the conventions'
bucket boundaries. What they have no name for is ``edgeproxy_*``: requests
by outcome and error class, cost, circuits, store calls, continuations,
stream anomalies.

Labels are low-cardinality by construction, as the EMF dimensions are:
models and deployment ids come from the configuration, outcomes and error
classes from fixed enums; never a key, a caller or a request id. Each
event is a few label lookups and increments (no per-request objects of its
own); the record it reads is the request log's, built anyway.
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.exposition import CONTENT_TYPE_LATEST, generate_latest

from edgeproxy.routing.snapshot import CircuitState
from edgeproxy.service.run import Run
from edgeproxy.service.tracing.attributes import PROVIDERS, operation_name
from edgeproxy.state.usage_log import RequestRecord

# The conventions' explicit bucket boundaries.
DURATION_BUCKETS = tuple(0.01 * 2**i for i in range(14))  # 0.01, 0.02, 0.04 ... 81.92
TTFT_BUCKETS = (
    *(0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1),
    *(0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0),
)
TOKEN_BUCKETS = tuple(float(4**i) for i in range(14))  # 1, 4, 16 ... 67108864
STORE_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5)

OPERATION = "gen_ai_operation_name"
MODEL = "gen_ai_request_model"
PROVIDER = "gen_ai_provider_name"
ERROR = "error_type"
DEPLOYMENT = "edgeproxy_deployment"


class PrometheusMetrics:
    """One registry per gateway (tests run several in one process)."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        counter, histogram = self._counter, self._histogram
        self._requests = counter(
            "edgeproxy_requests",
            "Finished requests, by outcome and error class (as the request log records them)",
            (OPERATION, MODEL, "outcome", ERROR),
        )
        self._duration = histogram(
            "gen_ai_server_request_duration_seconds",
            "Request start to its end (a stream: its last event)",
            (OPERATION, MODEL, ERROR),
            DURATION_BUCKETS,
        )
        self._ttft = histogram(
            "gen_ai_server_time_to_first_token_seconds",
            "A stream's first content chunk, from the request's start",
            (OPERATION, MODEL),
            TTFT_BUCKETS,
        )
        self._attempts = histogram(
            "gen_ai_client_operation_duration_seconds",
            "Each upstream attempt's time to its answer (a stream: to its opening)",
            (OPERATION, PROVIDER, MODEL, DEPLOYMENT, ERROR),
            DURATION_BUCKETS,
        )
        self._tokens = histogram(
            "gen_ai_client_token_usage",
            "Tokens of each served answer, as spend and limits counted them",
            (OPERATION, PROVIDER, MODEL, DEPLOYMENT, "gen_ai_token_type"),
            TOKEN_BUCKETS,
        )
        self._cost = counter(
            "edgeproxy_cost_usd",
            "Spend of served answers at their deployment's prices",
            (MODEL, DEPLOYMENT),
        )
        # What the conventions have no name for: circuits, continuations, the store.
        self._circuit = Gauge(
            "edgeproxy_circuit_state",
            "1 for a deployment's circuit state as this process last wrote it",
            [DEPLOYMENT, "state"],
            registry=self.registry,
        )
        self._transitions = counter(
            "edgeproxy_circuit_transitions",
            "Circuit transitions this process wrote, by the state entered",
            (DEPLOYMENT, "state"),
        )
        self._continuations = counter(
            "edgeproxy_stream_continuations",
            "Streams cut after their commit and continued on another deployment",
            (),
        )
        self._anomalies = counter(
            "edgeproxy_stream_anomalies",
            "Streams relayed as answers with an irregular end (000's anomalies), by kind",
            (DEPLOYMENT, "anomaly"),
        )
        self._store = histogram(
            "edgeproxy_store_operation_duration_seconds",
            "Each DynamoDB call, retries included",
            ("operation", "outcome"),
            STORE_BUCKETS,
        )

    def _counter(self, name: str, doc: str, labels: tuple[str, ...]) -> Counter:
        return Counter(name, doc, labels, registry=self.registry)

    def _histogram(
        self, name: str, doc: str, labels: tuple[str, ...], buckets: tuple[float, ...]
    ) -> Histogram:
        return Histogram(name, doc, labels, buckets=buckets, registry=self.registry)

    def observe(self, record: RequestRecord, run: Run) -> None:
        """Count a finished request, its attempts, and (when served) its tokens and cost."""
        operation = operation_name(record.operation)
        error = record.failure_class or ""
        self._requests.labels(operation, record.model, record.outcome, error).inc()
        self._duration.labels(operation, record.model, error).observe(record.latency_ms / 1000)
        if record.ttft_ms is not None:
            self._ttft.labels(operation, record.model).observe(record.ttft_ms / 1000)
        config = run.config
        for attempt in run.trace.attempts:
            dep = config.deployment(attempt.deployment_id)
            provider = PROVIDERS.get(dep.provider, dep.provider.value) if dep else ""
            self._attempts.labels(
                operation,
                provider,
                attempt.model,
                attempt.deployment_id,
                attempt.error_class or attempt.error_kind or "",
            ).observe(attempt.latency_ms / 1000)
        served = config.deployment(record.deployment) if record.deployment else None
        if served is None or record.outcome != "success":
            return
        provider = PROVIDERS.get(served.provider, served.provider.value)
        model = record.model
        for kind, tokens in (("input", record.prompt_tokens), ("output", record.completion_tokens)):
            self._tokens.labels(operation, provider, model, served.id, kind).observe(tokens)
        self._cost.labels(model, served.id).inc(record.cost_usd)

    def count(self, name: str, value: float = 1, /, **dimensions: str) -> None:
        """The EMF counts that have a Prometheus form here (circuits, continuations, stream
        anomalies)."""
        if name == "CircuitTransitions":
            dep, entered = dimensions.get("deployment", ""), dimensions.get("to_state", "")
            self._transitions.labels(dep, entered).inc(value)
            for state in CircuitState:
                self._circuit.labels(dep, state.value).set(1 if state.value == entered else 0)
        elif name == "StreamContinuations":
            self._continuations.inc(value)
        elif name == "StreamAnomalies":
            dep, anomaly = dimensions.get("deployment", ""), dimensions.get("anomaly", "")
            self._anomalies.labels(dep, anomaly).inc(value)

    def store_call(self, operation: str, seconds: float, failed: bool) -> None:
        """Time one store call (``BoundedClient``'s, retries included)."""
        self._store.labels(operation, "error" if failed else "ok").observe(seconds)

    def exposition(self) -> tuple[bytes, str]:
        """The registry in Prometheus' text format (0.0.4) and its content type."""
        return generate_latest(self.registry), CONTENT_TYPE_LATEST

    def shutdown(self) -> None:
        """Nothing to send: a scrape reads the registry."""
