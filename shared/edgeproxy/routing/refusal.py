"""The client's view of a failed request: final error mapping (primary spec).

The last upstream answer wins (its status and sanitized message); without
one, what blocked the pool decides: every circuit open is 503
``model_overloaded`` with Retry-After, misconfiguration everywhere or every
deployment disabled (``enabled: false``) is 503 ``model_unavailable``, capacity or rpm/tpm limits (or capacity reserved for
higher roles) are 429 ``rate_limit_exceeded``. ``chain_reason`` says which
fallback chain a spent pool leads to.

A request that ended on a provider's 429 answers at once with the wait that
is left (until the capacity circuit closes) as its Retry-After; once the
gateway has itself retried (two or more upstream calls), it also tells the
client not to repeat those retries (``retries_spent``: ``x-should-retry:
false``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from edgeproxy.config.models import FallbackReason
from edgeproxy.errors import (
    DeadlineExceeded,
    EdgeproxyError,
    GatewayFailure,
    UpstreamError,
)
from edgeproxy.routing.faults import FailureClass, Fault, FaultKind
from edgeproxy.routing.judge.pool import pool_refusal
from edgeproxy.routing.step import PoolFailure


@dataclass(slots=True)
class RouteFailure:
    """Every pool tried failed; ``last_fault`` is the last upstream answer, if any."""

    primary: PoolFailure
    last_fault: Fault | None
    failures: list[PoolFailure] = field(default_factory=list)
    last_deployment: str | None = None  # the deployment that gave ``last_fault``


# An upstream rejecting the gateway's own key must not read like a rejection of
# the client's key: the status stays (000), the code and message say whose it was.
_CREDENTIAL_REJECTED = {
    401: ("upstream_credential_rejected", "rejected the gateway's upstream credential"),
    403: ("upstream_access_denied", "denied the gateway's upstream credential access"),
}


def fault_error(fault: Fault, deployment: str | None = None) -> EdgeproxyError:
    """What the client sees for an upstream's failure: its status and sanitized message.

    ``deployment``: the deployment that failed, named where the error is the
    gateway's own (its credential), never the client's.
    """
    named = f" for deployment `{deployment}`" if deployment else ""
    if fault.kind is FaultKind.HTTP and fault.status in _CREDENTIAL_REJECTED:
        code, what = _CREDENTIAL_REJECTED[fault.status]
        return UpstreamError(
            f"The upstream provider {what}{named}; your own API key was accepted. "
            "The gateway's operator must fix that credential.",
            status=fault.status,
            type="api_error",
            code=code,
        )
    if fault.kind is FaultKind.GATEWAY:
        return GatewayFailure(
            f"The gateway failed{named} before calling the provider: {fault.message}.",
            code=fault.code,
        )
    if fault.kind is FaultKind.HTTP and fault.status is not None:
        return UpstreamError(
            fault.message,
            status=fault.status,
            type=fault.type or "api_error",
            code=fault.code,
            param=fault.param,
            retry_after=fault.retry_after,
        )
    if fault.kind in (FaultKind.TIMEOUT, FaultKind.IDLE):
        return DeadlineExceeded("The upstream did not answer in time.")
    if fault.kind is FaultKind.TRUNCATED:
        return UpstreamError(
            "The upstream stream ended before the answer was complete.",
            status=502,
            code="upstream_stream_truncated",
        )
    if fault.kind is FaultKind.OVERSIZE:
        return UpstreamError(
            f"The upstream's answer was too large: {fault.message}.",
            status=502,
            code="upstream_answer_too_large",
        )
    if fault.kind is FaultKind.INCOMPATIBLE:
        # No candidate can take this request's shape: the request is what must change.
        return UpstreamError(
            f"No deployment of this model supports this request: {fault.message}",
            status=400,
            type="invalid_request_error",
            code="unsupported_request",
            param=fault.param,
        )
    if fault.kind is FaultKind.MALFORMED:
        return UpstreamError(
            "The upstream sent a malformed answer (not valid JSON or not the protocol's shape).",
            status=502,
            code="upstream_malformed",
        )
    return UpstreamError(
        "The upstream could not be reached (connection refused, reset or failed).",
        status=502,
        code="upstream_error",
    )


def final_error(failure: RouteFailure, *, now: float) -> EdgeproxyError:
    """The error for a request no pool could serve (primary spec, final error mapping).

    ``now`` dates the Retry-After of an rpm refusal: the limit is counted per
    minute bucket, so the honest wait is the time to the next bucket.
    """
    if failure.last_fault is not None:
        return _throttled(fault_error(failure.last_fault, failure.last_deployment), failure, now)
    return pool_refusal(failure.primary, now).error()


def _throttled(error: EdgeproxyError, failure: RouteFailure, now: float) -> EdgeproxyError:
    """``error`` for a last fault that was a provider's 429: the wait left, and whether the
    gateway already spent the retries a client would make."""
    pools = failure.failures or [failure.primary]
    source = next((f for f in reversed(pools) if f.fault is failure.last_fault), failure.primary)
    if source.verdict is None or source.verdict.cls is not FailureClass.THROTTLE:
        return error
    if source.retry_at is not None:
        error.retry_after = max(0.0, source.retry_at - now)
    error.retries_spent = sum(f.attempts for f in pools) >= 2
    return error


def chain_reason(failure: PoolFailure) -> FallbackReason | None:
    """Which fallback chain a spent pool leads to; None: the request ends here.

    A pool that was blocked (circuits, capacity, limits) takes the ``general``
    chain; one that ended on an upstream answer takes the chain its verdict
    names, and a rejected request takes none (another model would reject it too).
    """
    if failure.blocked is not None or failure.verdict is None:
        return FallbackReason.GENERAL
    return failure.verdict.fallback
