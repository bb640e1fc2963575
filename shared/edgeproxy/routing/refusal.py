"""The client's view of a failed request: final error mapping (primary spec).

The last upstream answer wins (its status and sanitized message); without
one, what blocked the pool decides: every circuit open is 503
``model_overloaded`` with Retry-After, misconfiguration everywhere is 503
``model_unavailable``, capacity or rpm/tpm limits are 429
``rate_limit_exceeded``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from edgeproxy.errors import (
    DeadlineExceeded,
    EdgeproxyError,
    ModelOverloaded,
    ModelUnavailable,
    RateLimited,
    UpstreamError,
)
from edgeproxy.routing.faults import Fault, FaultKind
from edgeproxy.routing.selection import BlockReason
from edgeproxy.routing.step import PoolFailure


@dataclass(slots=True)
class RouteFailure:
    """Every pool tried failed; ``last_fault`` is the last upstream answer, if any."""

    primary: PoolFailure
    last_fault: Fault | None
    failures: list[PoolFailure] = field(default_factory=list)


def fault_error(fault: Fault) -> EdgeproxyError:
    """What the client sees for an upstream's failure: its status and sanitized message."""
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
    return UpstreamError(
        "The upstream could not be reached or sent an invalid answer.",
        status=502,
        code="upstream_error",
    )


def final_error(failure: RouteFailure) -> EdgeproxyError:
    """The error for a request no pool could serve (primary spec, final error mapping)."""
    if failure.last_fault is not None:
        return fault_error(failure.last_fault)
    blocked = failure.primary.blocked
    if failure.primary.rate_limited and (
        blocked is None or blocked.reason is BlockReason.EXHAUSTED
    ):
        return RateLimited("Rate limit reached for this model; retry shortly.", retry_after=1.0)
    if blocked is None:
        return DeadlineExceeded("The request's deadline passed before any upstream answered.")
    if blocked.reason is BlockReason.OVERLOADED:
        return ModelOverloaded(
            "Every deployment of this model is cooling down; retry after the indicated time.",
            retry_after=blocked.retry_after,
        )
    if blocked.reason is BlockReason.RATE_LIMITED:
        return RateLimited(
            "Rate limit reached for this model; retry after the indicated time.",
            retry_after=blocked.retry_after,
        )
    if blocked.reason is BlockReason.INCOMPATIBLE:
        return ModelUnavailable(
            "No deployment of this model accepts this kind of request.", code="model_unavailable"
        )
    return ModelUnavailable("This model is unavailable because of its configuration.")
