"""A pool that stopped without an upstream answer: one refusal, the error clients got before.

Rows are ``PoolFailure`` values as the routing core's step leaves them, at a
virtual ``now`` 15 s into a minute; each maps to one reason, and its error
keeps the status, body and Retry-After of the final error mapping (primary
spec) the router answered with before the judge held it.
"""

from __future__ import annotations

import pytest

from edgeproxy.routing.blockage import Blocked, BlockReason
from edgeproxy.routing.judge.pool import pool_refusal
from edgeproxy.routing.judge.reasons import Reason
from edgeproxy.routing.refusal import RouteFailure, final_error
from edgeproxy.routing.step import PoolFailure

NOW = 60_000.0 + 15.0
LIMITED = "Rate limit reached for this model; retry after the indicated time."
ROWS = [
    (
        "slots taken between the read and the write",
        PoolFailure(at_capacity=True),
        Reason.POOL_SLOTS,
        (429, "rate_limit_exceeded", 1.0),
        "Every deployment of this model is serving as many requests as it can; "
        "retry after the indicated time.",
    ),
    (
        "an rpm race lost on every deployment",
        PoolFailure(rate_limited=True, blocked=Blocked(BlockReason.EXHAUSTED)),
        Reason.POOL_RPM,
        (429, "rate_limit_exceeded", 45.0),
        LIMITED,
    ),
    (
        "every circuit open",
        PoolFailure(blocked=Blocked(BlockReason.OVERLOADED, retry_after=12.5)),
        Reason.OVERLOADED,
        (503, "model_overloaded", 12.5),
        "Every deployment of this model is cooling down; retry after the indicated time.",
    ),
    (
        "every deployment at its limits",
        PoolFailure(rate_limited=True, blocked=Blocked(BlockReason.RATE_LIMITED, 7.0)),
        Reason.POOL_LIMITS,
        (429, "rate_limit_exceeded", 7.0),
        LIMITED,
    ),
    (
        "capacity only for higher roles",
        PoolFailure(blocked=Blocked(BlockReason.RESERVED)),
        Reason.RESERVED,
        (429, "rate_limit_exceeded", None),
        "No capacity of this model is available to this API key right now.",
    ),
    (
        "every deployment drained",
        PoolFailure(blocked=Blocked(BlockReason.DISABLED)),
        Reason.DISABLED,
        (503, "model_unavailable", None),
        "Every deployment of this model is disabled (drained) by its operator.",
    ),
    (
        "none serves the request's kind",
        PoolFailure(blocked=Blocked(BlockReason.INCOMPATIBLE)),
        Reason.INCOMPATIBLE,
        (503, "model_unavailable", None),
        "No deployment of this model accepts this kind of request.",
    ),
    (
        "misconfigured everywhere",
        PoolFailure(blocked=Blocked(BlockReason.UNAVAILABLE)),
        Reason.MISCONFIGURED,
        (503, "model_unavailable", None),
        "This model is unavailable because of its configuration.",
    ),
    (
        "the deadline passed before anything was tried",
        PoolFailure(),
        Reason.DEADLINE,
        (504, "timeout", None),
        "The request's deadline passed before any upstream answered.",
    ),
]


@pytest.mark.parametrize(
    ("failure", "reason", "answer", "message"), [r[1:] for r in ROWS], ids=[r[0] for r in ROWS]
)
def test_a_stopped_pool_is_one_refusal_and_the_router_answers_it(
    failure: PoolFailure,
    reason: Reason,
    answer: tuple[int, str, float | None],
    message: str,
) -> None:
    refusal = pool_refusal(failure, NOW)
    assert refusal.reason is reason
    error = final_error(RouteFailure(failure, None), now=NOW)
    assert (error.status, error.code, error.retry_after) == answer
    assert error.body()["error"]["message"] == message
    assert type(error) is type(refusal.error())
