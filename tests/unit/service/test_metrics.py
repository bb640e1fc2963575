"""The metrics switch and the circuit gauge (the scrape itself: tests/integration/usage/test_metrics.py)."""

from __future__ import annotations

from prometheus_client.parser import text_string_to_metric_families

from edgeproxy.service.metrics import metrics_for
from edgeproxy.service.metrics.prometheus import PrometheusMetrics
from edgeproxy.settings import Settings


def test_metrics_are_off_unless_asked_and_never_on_lambda() -> None:
    assert Settings.from_env({}).metrics is False
    assert metrics_for(Settings.from_env({})) is None
    on = Settings.from_env({"EDGEPROXY_METRICS": "on"})
    assert on.metrics is True
    assert isinstance(metrics_for(on), PrometheusMetrics)
    lambda_env = {"EDGEPROXY_METRICS": "on", "AWS_LAMBDA_FUNCTION_NAME": "edgeproxy-proxy"}
    assert Settings.from_env(lambda_env).metrics is False  # EMF there


def _gauge(metrics: PrometheusMetrics) -> dict[str, float]:
    body, _ = metrics.exposition()
    return {
        sample.labels["state"]: sample.value
        for family in text_string_to_metric_families(body.decode())
        for sample in family.samples
        if sample.name == "edgeproxy_circuit_state"
    }


def test_the_circuit_gauge_holds_one_state_per_deployment() -> None:
    metrics = PrometheusMetrics()
    metrics.count("CircuitTransitions", deployment="a", to_state="open")
    assert _gauge(metrics) == {"closed": 0, "open": 1, "half_open": 0}
    metrics.count("CircuitTransitions", deployment="a", to_state="half_open")
    metrics.count("CircuitTransitions", deployment="a", to_state="closed")
    assert _gauge(metrics) == {"closed": 1, "open": 0, "half_open": 0}
    metrics.count("Requests")  # an EMF count with no Prometheus form: ignored, not an error


def test_the_otlp_metrics_endpoint_follows_opentelemetrys_variables() -> None:
    base = {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318/"}
    assert Settings.from_env({}).otlp_metrics_endpoint is None
    assert Settings.from_env(base).otlp_metrics_endpoint == "http://collector:4318/v1/metrics"
    own = {**base, "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT": "http://m:4318/x"}
    assert Settings.from_env(own).otlp_metrics_endpoint == "http://m:4318/x"
    assert (
        Settings.from_env({**base, "OTEL_METRICS_EXPORTER": "none"}).otlp_metrics_endpoint is None
    )
    assert Settings.from_env({**base, "OTEL_SDK_DISABLED": "true"}).otlp_metrics_endpoint is None
    assert Settings.from_env({"OTEL_METRIC_EXPORT_INTERVAL": "250"}).otlp_metrics_interval_ms == 250
