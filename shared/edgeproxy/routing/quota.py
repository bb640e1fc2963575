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


# Answers carry rate-limit headers on every call; recording each would add a
# write per request. A reading is worth a write when it says something new.
RECORD_EVERY_S = 30.0
LOW_FRACTION = 0.1
HEADERS = "headers"  # the source of readings taken from answers' rate-limit headers
FETCHER_AGE_S = 600.0  # a fetcher's reading this fresh is never replaced by headers'


def worth_recording(reading: Quota, stored: QuotaStatus | None, now: float) -> bool:
    """Whether an answer's rate-limit reading should be written beside its stored one.

    Over a configured fetcher's reading of the same unit younger than
    ``FETCHER_AGE_S`` only when that one says spent and this answer shows
    quota left (the quota source the operator chose is the authority; headers
    often describe another window, e.g. per minute against a daily quota).
    Otherwise yes when nothing is stored for its unit, when the stored
    reading is older than ``RECORD_EVERY_S``, when the credential runs low (at
    most 10 % left: routing must learn before it is spent), or when a spent
    credential has refilled.
    """
    previous = next((q for q in (stored.quotas if stored else ()) if q.unit == reading.unit), None)
    if previous is None:
        return True
    remaining, limit = reading.remaining, reading.limit
    refilled = previous.remaining is not None and previous.remaining <= 0
    refilled = refilled and remaining is not None and remaining > 0
    fetched = previous.source not in ("", HEADERS, reading.source)
    if fetched and now - previous.fetched_at < FETCHER_AGE_S:
        return refilled
    if now - previous.fetched_at >= RECORD_EVERY_S:
        return True
    if remaining is not None and limit and remaining <= LOW_FRACTION * limit:
        return True
    return refilled
