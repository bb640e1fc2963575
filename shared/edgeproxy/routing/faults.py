"""What went wrong with one attempt, as plain data the core can classify.

The upstream client turns every foreign error (httpx exceptions, HTTP error
answers, bad SSE) into a ``Fault``; ``routing.failures.classify`` decides
what it means for routing. Messages here are already sanitized: no
credentials, no upstream URLs.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class FaultKind(StrEnum):
    HTTP = "http"  # the upstream answered with an error status
    CONNECT = "connect"  # could not connect (refused, DNS, TLS)
    RESET = "reset"  # connection dropped before response headers
    TIMEOUT = "timeout"  # response_ms passed before the (JSON) answer / headers
    IDLE = "idle"  # stream silent for longer than idle_ms
    TRUNCATED = "truncated"  # stream ended (EOF or drop) before it was complete
    MALFORMED = "malformed"  # unparseable body or SSE chunk
    OVERSIZE = "oversize"  # answer, SSE event or stream beyond gateway.upstream_limits
    INCOMPATIBLE = "incompatible"  # the deployment cannot serve this request shape
    GATEWAY = "gateway"  # the gateway itself failed (credential fetch): no upstream was called


class FailureClass(StrEnum):
    """Failure classes by effect (primary spec, "What counts as complete")."""

    REQUEST = "request"  # 400-class: end now with the provider's answer; health-neutral
    THROTTLE = "throttle"  # 429: open the failure domain's capacity circuit
    TRANSIENT = "transient"  # retry elsewhere; counts once toward the circuit
    CONFIGURATION = "configuration"  # bad credentials/access/model: quarantine
    GATEWAY = "gateway"  # our own fault: neutral
    INCOMPATIBLE = "incompatible"  # candidate cannot serve it: neutral, try another


@dataclass(frozen=True, slots=True)
class Fault:
    kind: FaultKind
    message: str
    status: int | None = None
    type: str | None = None
    code: str | None = None
    param: str | None = None
    retry_after: float | None = None  # seconds, from the provider's Retry-After
