"""Why a model's pool refused a request that no upstream answered: the pool's own verdict.

The routing core's step (``routing.step.next_step``) stops with a
``PoolFailure`` when nothing can be tried; ``pool_refusal`` is the one reason
that failure is (``routing.judge.reasons``). The router's final error
(``routing.refusal.final_error``) and the explainer's ``blocked`` come from
the same ``Stop``; a request that ended on an upstream answer is that
answer's, not a refusal.
"""

from __future__ import annotations

from edgeproxy.routing.eligibility import PARALLEL_RETRY_AFTER_S
from edgeproxy.routing.judge.reasons import Reason, Refusal
from edgeproxy.routing.selection import BlockReason
from edgeproxy.routing.step import PoolFailure

_LIMITED = "Rate limit reached for this model; retry after the indicated time."
_BLOCKED = {
    BlockReason.RESERVED: Refusal(
        # The capacity exists only for higher roles: this caller sees a pool with none.
        Reason.RESERVED,
        "No capacity of this model is available to this API key right now.",
    ),
    BlockReason.DISABLED: Refusal(
        Reason.DISABLED, "Every deployment of this model is disabled (drained) by its operator."
    ),
    BlockReason.INCOMPATIBLE: Refusal(
        Reason.INCOMPATIBLE, "No deployment of this model accepts this kind of request."
    ),
}
_MISCONFIGURED = Refusal(
    Reason.MISCONFIGURED, "This model is unavailable because of its configuration."
)


def pool_refusal(failure: PoolFailure, now: float) -> Refusal:
    """The refusal of a pool that stopped without an upstream answer, at ``now``.

    ``now`` dates the wait of an rpm race lost: the limit is counted per
    minute bucket, so the honest wait is the time to the next bucket.
    """
    blocked = failure.blocked
    spent = blocked is None or blocked.reason is BlockReason.EXHAUSTED
    if failure.at_capacity and spent:
        # Every slot was taken between the read and the write (another instance got there).
        return Refusal(
            Reason.POOL_SLOTS,
            "Every deployment of this model is serving as many requests as it can; "
            "retry after the indicated time.",
            PARALLEL_RETRY_AFTER_S,
        )
    if failure.rate_limited and spent:
        return Refusal(Reason.POOL_RPM, _LIMITED, 60.0 - now % 60.0)
    if blocked is None:
        return Refusal(
            Reason.DEADLINE, "The request's deadline passed before any upstream answered."
        )
    if blocked.reason is BlockReason.OVERLOADED:
        return Refusal(
            Reason.OVERLOADED,
            "Every deployment of this model is cooling down; retry after the indicated time.",
            blocked.retry_after,
        )
    if blocked.reason is BlockReason.RATE_LIMITED:
        return Refusal(Reason.POOL_LIMITS, _LIMITED, blocked.retry_after)
    return _BLOCKED.get(blocked.reason, _MISCONFIGURED)
