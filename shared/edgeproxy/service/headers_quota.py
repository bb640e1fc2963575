"""The quota an answer's rate-limit headers report, as writes beside its outcome.

Providers send their view of the credential's remaining quota on every
answer; it is written to the credential's quota item (the one the refresh job
writes) in the same round trip as the outcome, and only when it says
something new (``routing.quota.worth_recording``), so it costs no write on
most requests.
"""

from __future__ import annotations

from collections.abc import Coroutine
from typing import Any

from edgeproxy.config.deployment import Deployment
from edgeproxy.routing.quota import HEADERS, worth_recording
from edgeproxy.routing.snapshot import credential_key
from edgeproxy.service.pool import PoolContext
from edgeproxy.state.store import QuotaSink
from edgeproxy.upstream.headers import RateLimitInfo
from edgeproxy.upstream.quota import readings_from_headers


def quota_writes(
    store: QuotaSink,
    ctx: PoolContext,
    dep: Deployment,
    rate_limits: RateLimitInfo | None,
    now: float,
) -> list[Coroutine[Any, Any, bool]]:
    """The quota writes an answer from ``dep`` warrants (none for most answers)."""
    if rate_limits is None or not dep.credential:
        return []
    credential = credential_key(dep.credential)
    stored = ctx.snapshot.quotas.get(credential)
    return [
        store.put_quota(reading)
        for reading in readings_from_headers(credential, rate_limits, now, HEADERS)
        if worth_recording(reading, stored, now)
    ]
