"""Process settings, read once from the environment (the only module that does).

| variable | default | meaning |
|---|---|---|
| ``EDGEPROXY_TABLE`` | ``edgeproxy`` | the state table's name |
| ``EDGEPROXY_TABLE_SCHEMA`` | ``pk,sk,expires_at`` | partition key, sort key, TTL attribute (set by template.yaml) |
| ``EDGEPROXY_DYNAMODB_ENDPOINT`` | unset (AWS) | any DynamoDB-protocol endpoint, e.g. the embedded one |
| ``AWS_REGION`` / ``AWS_DEFAULT_REGION`` | ``us-east-1`` | region of the table and of SSM / Secrets Manager |
| ``EDGEPROXY_CONFIG_TTL_SECONDS`` | ``10`` | how long a handler caches the configuration |
| ``EDGEPROXY_STORE_TIMEOUT_SECONDS`` | ``2`` | longest one DynamoDB call may take, retries included |
| ``EDGEPROXY_TRUST_FORWARDED_FOR`` | ``false`` | take the caller IP from ``X-Forwarded-For`` (only behind a trusted proxy) |
| ``EDGEPROXY_LOG_LEVEL`` | ``INFO`` | log level |
| ``EDGEPROXY_MAX_TOTAL_MS`` | unset | ceiling on every request's total deadline, over the configuration (set by template.yaml: 27 s behind API Gateway's 30 s limit) |
| ``EDGEPROXY_MAX_KEY_REQUESTS`` | ``128`` | requests in progress one client key may hold in one process (``service/limits/slots.py``; a quarter of the local server's 512); beyond it, 429 before the body is read |
| ``EDGEPROXY_ADMIN_KEY_REF`` | unset | credential reference (``env:``, ``ssm:``, ``secretsmanager:``) of the bootstrap admin key |
| ``EDGEPROXY_KEY_CACHE_TTL_SECONDS`` | ``10`` | how long a process trusts a client-key lookup (a revocation reaches every instance within it) |
| ``EDGEPROXY_COALESCE_MS`` | ``25`` (``0`` on Lambda) | flush window of the usage counters (summed, one write per deployment and minute per window) and switch of shared pool reads; ``0``: each request reads and writes on its own (the Mangum handler always) |
| ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`` / ``OTEL_EXPORTER_OTLP_ENDPOINT`` | unset (no traces) | where OTLP/HTTP traces go: the first as it is, the second with ``/v1/traces`` added (OpenTelemetry's variables; ``OTEL_SDK_DISABLED=true`` or ``OTEL_TRACES_EXPORTER=none`` turn it off) |
| ``OTEL_SERVICE_NAME`` | ``edgeproxy`` | the traces' ``service.name`` |
| ``EDGEPROXY_XRAY`` | ``off`` | ``on``: X-Ray subsegments per request and attempt through Powertools' Tracer (Lambda; template.yaml's ``XRayTracing``) |
| ``EDGEPROXY_METRICS`` | ``off`` | ``on``: ``GET /metrics`` (admin keys only) serves Prometheus metrics (``service/metrics/``; needs the ``metrics`` extra); long-lived processes only, ignored on Lambda (EMF there) |
| ``OTEL_EXPORTER_OTLP_METRICS_ENDPOINT`` | ``OTEL_EXPORTER_OTLP_ENDPOINT`` + ``/v1/metrics`` | with ``EDGEPROXY_METRICS=on``: the same metrics also pushed over OTLP/HTTP (``service/metrics/otlp.py``; needs the ``otel`` extra); ``OTEL_METRICS_EXPORTER=none`` turns only this off; ``OTEL_METRIC_EXPORT_INTERVAL`` (ms, default 60000) is the push interval |
| ``EDGEPROXY_ALERT_TOPIC_ARN`` | unset (none) | an SNS topic every budget alert is also published to (template.yaml's ``AlertTopicArn``; ``service/alerts/topic.py``) |
| ``EDGEPROXY_AUTH`` | ``required`` | ``off``: serve ``/v1/*`` requests without a key as anonymous ``free`` callers (local demos only; ignored on Lambda) |
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field


def _bool(value: str | None) -> bool:
    return (value or "").strip().lower() in {"1", "true", "yes", "on"}


def _otlp_traces_endpoint(env: Mapping[str, str]) -> str | None:
    """OpenTelemetry's own variables: the traces endpoint, or the base one plus ``/v1/traces``."""
    if _bool(env.get("OTEL_SDK_DISABLED")) or env.get("OTEL_TRACES_EXPORTER", "").strip() == "none":
        return None
    if traces := env.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "").strip():
        return traces
    if base := env.get("OTEL_EXPORTER_OTLP_ENDPOINT", "").strip():
        return base.rstrip("/") + "/v1/traces"
    return None


def _otlp_metrics_endpoint(env: Mapping[str, str]) -> str | None:
    """The metrics endpoint by the same variables: its own, or the base one plus ``/v1/metrics``."""
    if (
        _bool(env.get("OTEL_SDK_DISABLED"))
        or env.get("OTEL_METRICS_EXPORTER", "").strip() == "none"
    ):
        return None
    if metrics := env.get("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", "").strip():
        return metrics
    if base := env.get("OTEL_EXPORTER_OTLP_ENDPOINT", "").strip():
        return base.rstrip("/") + "/v1/metrics"
    return None


@dataclass(frozen=True, slots=True)
class Settings:
    """Everything a process needs from its environment."""

    table: str = "edgeproxy"
    table_schema: str = "pk,sk,expires_at"
    dynamodb_endpoint: str | None = None
    region: str = "us-east-1"
    config_ttl_seconds: float = 10.0
    store_timeout_seconds: float = 2.0
    trust_forwarded_for: bool = False
    log_level: str = "INFO"
    max_total_ms: int | None = None
    max_key_requests: int = 128
    admin_key_ref: str | None = None
    key_cache_ttl_seconds: float = 10.0
    auth: str = "required"
    on_lambda: bool = False
    coalesce_ms: float = 25.0
    otlp_traces_endpoint: str | None = None
    trace_service_name: str = "edgeproxy"
    xray: bool = False
    metrics: bool = False
    otlp_metrics_endpoint: str | None = None
    otlp_metrics_interval_ms: int = 60000
    # The AWS client's connections (``aws/wire.ClientOptions``, built in ``clients.py``): the
    # one place these numbers live. The store's: a short connect, reads bounded by
    # ``store_timeout_seconds`` (which also caps the connect), one retry.
    store_connect_timeout_seconds: float = 0.5
    store_max_attempts: int = 2
    # SSM and Secrets Manager: one read per reference per process, on the first request that
    # needs it; a slow or unreachable service fails in seconds (botocore's defaults wait 60 s,
    # up to 5 times). 3 attempts: botocore's standard mode.
    secrets_connect_timeout_seconds: float = 2.0
    secrets_read_timeout_seconds: float = 5.0
    secrets_max_attempts: int = 3
    # Connections open at once per endpoint (aiohttp's default); every one may be kept alive
    # (a burst reuses them instead of churning), for this long while idle.
    aws_max_connections: int = 100
    aws_keepalive_seconds: float = 30.0
    alert_topic_arn: str | None = None
    environ: Mapping[str, str] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Settings:
        """Read the settings; ``environ`` defaults to ``os.environ``.

        The environment is kept (not shown in reprs) so that ``env:NAME``
        credential references resolve without another module reading it.
        """
        env = dict(os.environ if environ is None else environ)
        on_lambda = bool(env.get("AWS_LAMBDA_FUNCTION_NAME"))
        return cls(
            table=env.get("EDGEPROXY_TABLE", "edgeproxy"),
            table_schema=env.get("EDGEPROXY_TABLE_SCHEMA", "pk,sk,expires_at"),
            dynamodb_endpoint=env.get("EDGEPROXY_DYNAMODB_ENDPOINT") or None,
            region=env.get("AWS_REGION") or env.get("AWS_DEFAULT_REGION") or "us-east-1",
            config_ttl_seconds=float(env.get("EDGEPROXY_CONFIG_TTL_SECONDS", "10")),
            store_timeout_seconds=float(env.get("EDGEPROXY_STORE_TIMEOUT_SECONDS", "2")),
            trust_forwarded_for=_bool(env.get("EDGEPROXY_TRUST_FORWARDED_FOR")),
            log_level=env.get("EDGEPROXY_LOG_LEVEL", "INFO").upper(),
            max_total_ms=int(env["EDGEPROXY_MAX_TOTAL_MS"])
            if env.get("EDGEPROXY_MAX_TOTAL_MS")
            else None,
            max_key_requests=max(1, int(env.get("EDGEPROXY_MAX_KEY_REQUESTS") or "128")),
            admin_key_ref=env.get("EDGEPROXY_ADMIN_KEY_REF") or None,
            key_cache_ttl_seconds=float(env.get("EDGEPROXY_KEY_CACHE_TTL_SECONDS", "10")),
            auth=(env.get("EDGEPROXY_AUTH") or "required").strip().lower(),
            on_lambda=on_lambda,
            coalesce_ms=float(env.get("EDGEPROXY_COALESCE_MS") or (0 if on_lambda else 25)),
            otlp_traces_endpoint=_otlp_traces_endpoint(env),
            trace_service_name=env.get("OTEL_SERVICE_NAME") or "edgeproxy",
            xray=_bool(env.get("EDGEPROXY_XRAY")),
            metrics=_bool(env.get("EDGEPROXY_METRICS")) and not on_lambda,
            otlp_metrics_endpoint=_otlp_metrics_endpoint(env),
            otlp_metrics_interval_ms=max(
                10, int(env.get("OTEL_METRIC_EXPORT_INTERVAL", "").strip() or "60000")
            ),
            alert_topic_arn=(env.get("EDGEPROXY_ALERT_TOPIC_ARN") or "").strip() or None,
            environ=env,
        )

    @property
    def auth_off(self) -> bool:
        """Whether keyless requests are served: only ``EDGEPROXY_AUTH=off``, never on Lambda.

        A deployed gateway (Lambda) always requires a key, whatever this says,
        so with no keys it refuses every request instead of relaying for anyone.
        """
        return self.auth == "off" and not self.on_lambda
