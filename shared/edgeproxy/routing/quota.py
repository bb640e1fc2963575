"""When a provider credential's reported quota rules its deployments out (pure).

A reading says the credential is spent when its ``remaining`` is 0 (or
less). Its deployments are then ``rate_limited`` until the reading's reset
time; a spent reading without a reset time holds until it ages out. A
reading older than ``max_age`` seconds is ignored altogether: quota that
nobody refreshed says nothing about now.

    >>> spent = Quota("c", "requests", remaining=0, reset_at=130.0, fetched_at=100.0)
    >>> spent_for(QuotaStatus("c", (spent,)), now=110.0, max_age=600.0)
    20.0
"""

from __future__ import annotations

from edgeproxy.routing.snapshot import Quota, QuotaStatus


def _spent_for(quota: Quota, now: float, max_age: float) -> float | None:
    age = now - quota.fetched_at
    if quota.remaining is None or quota.remaining > 0 or age > max_age or age < -max_age:
        return None
    until = quota.reset_at if quota.reset_at is not None else quota.fetched_at + max_age
    return until - now if until > now else None


def spent_for(status: QuotaStatus | None, now: float, max_age: float) -> float | None:
    """Seconds until the credential's quota refills, if a fresh reading says it is spent."""
    if status is None:
        return None
    waits = [w for q in status.quotas if (w := _spent_for(q, now, max_age)) is not None]
    return max(waits) if waits else None
