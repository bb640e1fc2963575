"""Span attributes of a request and of its attempts, by the GenAI semantic conventions.

Both tracers (OTLP, X-Ray) take them from here. The ``gen_ai.*``,
``server.*``, ``error.type`` and ``http.response.status_code`` names are
OpenTelemetry's (GenAI client spans: ``gen_ai.system`` as in conventions
1.36, ``gen_ai.provider.name`` as after it, with the same value); the
``edgeproxy.*`` ones are this gateway's. Identifiers and counts only.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from edgeproxy.config.deployment import Deployment
from edgeproxy.config.providers import ProviderKind
from edgeproxy.service.trace import AttemptRecord, Trace
from edgeproxy.service.tracing.span import RequestSpan

Value = str | int | float | bool
Attributes = dict[str, Value]

# The conventions' well-known provider names (an OpenAI-compatible server speaks openai's flavour).
PROVIDERS = {
    ProviderKind.OPENAI: "openai",
    ProviderKind.OPENAI_COMPAT: "openai",
    ProviderKind.AZURE: "azure.ai.openai",
    ProviderKind.ANTHROPIC: "anthropic",
    ProviderKind.BEDROCK: "aws.bedrock",
}
# Operation names: the conventions' where one applies, else edgeproxy's own.
OPERATIONS = {"chat": "chat", "responses": "chat", "completions": "text_completion"}


def operation_name(operation: str) -> str:
    return OPERATIONS.get(operation, operation)


def provider(dep: Deployment) -> Attributes:
    name = PROVIDERS.get(dep.provider, dep.provider.value)
    return {"gen_ai.system": name, "gen_ai.provider.name": name}


def server(dep: Deployment) -> Attributes:
    """The upstream's host and port (never its path or query: they may carry keys)."""
    if dep.base_url:
        parts = urlsplit(dep.base_url)
        host, port = parts.hostname, parts.port
        if port is None:
            port = 443 if parts.scheme == "https" else 80
    elif dep.provider is ProviderKind.BEDROCK and dep.region:
        host, port = f"bedrock-runtime.{dep.region}.amazonaws.com", 443
    else:
        return {}
    return {"server.address": host, "server.port": port} if host else {}


def _put(attrs: Attributes, key: str, value: Value | None) -> None:
    if value is not None:
        attrs[key] = value


def request_attributes(span: RequestSpan, trace: Trace) -> Attributes:
    """The request span's: what the client asked and got, and how routing went."""
    attrs: Attributes = {
        "gen_ai.operation.name": operation_name(span.operation),
        "gen_ai.request.model": span.model,
        "edgeproxy.request_id": span.request_id,
        "edgeproxy.stream": span.stream,
        "edgeproxy.attempts": len(trace.attempts),
        "edgeproxy.fallback_used": trace.fallback_used,
    }
    served = span.deployment(trace.served_by) if trace.served_by else None
    if served is not None:
        attrs.update(provider(served))
    _put(attrs, "edgeproxy.deployment.id", trace.served_by)
    _put(attrs, "edgeproxy.served_model", trace.served_model)
    _put(attrs, "edgeproxy.strategy", trace.strategy)
    _put(attrs, "edgeproxy.surface", span.surface)
    _put(attrs, "gen_ai.response.model", span.response_model)
    _put(attrs, "gen_ai.response.id", span.response_id)
    _put(attrs, "gen_ai.usage.input_tokens", span.input_tokens)
    _put(attrs, "gen_ai.usage.output_tokens", span.output_tokens)
    _put(attrs, "http.response.status_code", span.status)
    _put(attrs, "error.type", span.error_type)
    ttft = span.ttft_s
    _put(attrs, "edgeproxy.time_to_first_token_ms", None if ttft is None else round(ttft * 1000))
    if span.error_type is not None and trace.attempts:
        _put(attrs, "edgeproxy.failure.class", trace.attempts[-1].error_class)
    return attrs


def served(record: AttemptRecord, trace: Trace) -> bool:
    """Whether ``record`` is an attempt that answered (not failed, not abandoned)."""
    return (
        record.deployment_id == trace.served_by
        and record.error_class is None
        and record.error_kind is None
    )


def attempt_attributes(
    span: RequestSpan, trace: Trace, record: AttemptRecord, number: int
) -> Attributes:
    """One attempt's span: the deployment it went to and how it ended."""
    dep = span.deployment(record.deployment_id)
    attrs: Attributes = {
        "gen_ai.operation.name": operation_name(span.operation),
        "edgeproxy.deployment.id": record.deployment_id,
        "edgeproxy.model": record.model,
        "edgeproxy.attempt.number": number,
        "edgeproxy.stream": span.stream,
        "edgeproxy.sticky": record.sticky,
        "edgeproxy.probe": record.probe,
        "edgeproxy.continuation": record.continuation,
    }
    if dep is not None:
        attrs["gen_ai.request.model"] = dep.upstream_model
        attrs.update(provider(dep))
        attrs.update(server(dep))
    _put(attrs, "http.response.status_code", record.status)
    _put(attrs, "edgeproxy.failure.class", record.error_class)
    _put(attrs, "error.type", record.error_kind)
    if record.usage is not None:
        attrs["gen_ai.usage.input_tokens"] = record.usage.get("prompt_tokens", 0)
        attrs["gen_ai.usage.output_tokens"] = record.usage.get("completion_tokens", 0)
    elif served(record, trace) and not span.stream:
        _put(attrs, "gen_ai.usage.input_tokens", span.input_tokens)
        _put(attrs, "gen_ai.usage.output_tokens", span.output_tokens)
        _put(attrs, "gen_ai.response.model", span.response_model)
    if record.anomalies:
        attrs["edgeproxy.anomalies"] = ",".join(record.anomalies)
    return attrs


def attempt_end(span: RequestSpan, trace: Trace, record: AttemptRecord) -> float:
    """When an attempt ended: a stream that answered (or was abandoned) lasts to the request's end."""
    end = record.started_at + record.latency_ms / 1000
    abandoned = record.error_kind == "abandoned"
    if span.ended_at is not None and (abandoned or (span.stream and served(record, trace))):
        return max(end, span.ended_at)
    return end
