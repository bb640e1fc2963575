"""What one request's spans are made of, and the tracer protocol the gateway calls.

The gateway fills a ``RequestSpan`` as the request runs (its start, the first
token a stream sent, its usage and how it ended) and hands it, with the
routing trace (``service/trace.py``: one record per attempt), to the tracer
once the request is over. The tracer builds its spans from both, with their
recorded times, so nothing on the request path waits for a tracing library
and a gateway without tracing (``NoTracer``) builds nothing at all.

Only identifiers and counts go into spans: models, deployment ids, hosts,
statuses, failure classes, tokens. Never a prompt, an answer, a header or a
credential.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from edgeproxy.config.deployment import Deployment
from edgeproxy.config.models import GatewayConfig
from edgeproxy.service.request import ProxyRequest
from edgeproxy.service.trace import Trace


@dataclass(slots=True)
class RequestSpan:
    """One routed request, as its tracer sees it (epoch seconds throughout)."""

    request_id: str
    operation: str
    model: str
    stream: bool
    started_at: float
    surface: str | None = None
    # The request's configuration (each attempt's provider and server address).
    config: GatewayConfig | None = None
    ended_at: float | None = None
    first_token_at: float | None = None  # streams: the first content sent to the client
    input_tokens: int | None = None
    output_tokens: int | None = None
    response_model: str | None = None
    response_id: str | None = None
    status: int | None = None  # the status the client got (in-band errors: the error's)
    error_type: str | None = None  # None: it succeeded

    @classmethod
    def of(cls, req: ProxyRequest, config: GatewayConfig, now: float) -> RequestSpan:
        return cls(
            request_id=req.request_id,
            operation=req.operation.value,
            model=req.model,
            stream=req.stream,
            started_at=now,
            surface=req.surface,
            config=config,
        )

    def deployment(self, deployment_id: str) -> Deployment | None:
        return None if self.config is None else self.config.deployment(deployment_id)

    @property
    def ttft_s(self) -> float | None:
        """Seconds from the request's start to the first token the client was sent."""
        return None if self.first_token_at is None else self.first_token_at - self.started_at


class Tracer(Protocol):
    """Exports finished requests as spans; ``enabled`` False means it wants none."""

    @property
    def enabled(self) -> bool: ...

    def export(self, span: RequestSpan, trace: Trace) -> None:
        """Record ``span`` and one child per attempt of ``trace`` (must not block on I/O)."""
        ...

    def flush(self) -> None:
        """Send what is pending (a Lambda invocation's end); may block up to a timeout."""
        ...

    def shutdown(self) -> None:
        """Flush and stop (the process is closing)."""
        ...


class NoTracer:
    """Tracing off: the gateway asks ``enabled`` and records nothing."""

    enabled = False

    def export(self, span: RequestSpan, trace: Trace) -> None:
        return None

    def flush(self) -> None:
        return None

    def shutdown(self) -> None:
        return None
