"""Why nothing can be tried now: the ``Blocked`` answer of ``routing.selection``.

``blocked_by`` reads every deployment's eligibility and names the blocker the
service maps to its answer (``routing.refusal``): every deployment disabled,
none compatible, every circuit open (by misconfiguration or not), or limits
and capacity.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum

from edgeproxy.config.deployment import Deployment
from edgeproxy.routing.eligibility import Eligibility, Status
from edgeproxy.routing.explain.reasons import Reason
from edgeproxy.routing.snapshot import OpenCause


class BlockReason(StrEnum):
    OVERLOADED = "overloaded"  # every circuit open: 503 model_overloaded + Retry-After
    UNAVAILABLE = "unavailable"  # misconfiguration / weight 0 everywhere: 503 model_unavailable
    DISABLED = "disabled"  # every deployment disabled by its operator: 503 model_unavailable
    RATE_LIMITED = "rate_limited"  # capacity or rpm/tpm limits: 429 rate_limit_exceeded
    INCOMPATIBLE = "incompatible"  # no deployment serves this operation/modality/feature
    EXHAUSTED = "exhausted"  # the caller ruled out every eligible one: answer the last error
    RESERVED = "reserved"  # every deployment is reserved for higher roles: 429, as if absent


@dataclass(frozen=True, slots=True)
class Blocked:
    """Nothing can be tried now; ``retry_after`` seconds until something frees up (if known)."""

    reason: BlockReason
    retry_after: float | None = None
    statuses: tuple[Eligibility, ...] = field(default=())
    reasons: tuple[Reason, ...] = ()  # every deployment's exclusion (``routing.explain``)


def blocked_by(
    deployments: Sequence[Deployment],
    statuses: Mapping[str, Eligibility],
    skip: Collection[str],
    *,
    weight_excluded: bool,
) -> Blocked:
    """The ``Blocked`` for ``statuses`` (``skip``: ids the request ruled out itself)."""
    every = tuple(statuses[d.id] for d in deployments)
    if all(s.status is Status.DISABLED for s in every):
        return Blocked(BlockReason.DISABLED, None, every)
    compatible = [s for s in every if s.status not in (Status.INCOMPATIBLE, Status.DISABLED)]
    if not compatible:
        return Blocked(BlockReason.INCOMPATIBLE, None, every)
    blocked = [s for s in compatible if not s.eligible and s.deployment_id not in skip]
    if not blocked:
        # Eligible deployments exist but every strategy dropped them (weight 0 under weighted ones).
        return Blocked(
            BlockReason.UNAVAILABLE if weight_excluded else BlockReason.EXHAUSTED, None, every
        )
    # A disabled deployment waits for an operator; the others say when they free up.
    retry_after = min(s.retry_after for s in blocked)
    if all(s.circuit_blocked for s in blocked):
        if all(s.cause is OpenCause.CONFIGURATION for s in blocked):
            return Blocked(BlockReason.UNAVAILABLE, retry_after, every)
        return Blocked(BlockReason.OVERLOADED, retry_after, every)
    return Blocked(BlockReason.RATE_LIMITED, retry_after, every)
