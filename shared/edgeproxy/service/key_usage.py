"""A client key's tpm limit and spend budget, checked on the pool read and fed by outcomes.

The key's minute bucket and spend come in the same BatchGetItem as the pool's
state (``SnapshotRequest.key_id``), so the check costs no round trip. Tokens
and cost are known only after an answer, so requests already in flight when
a key crosses its limit still finish: the overshoot is bounded by them.
"""

from __future__ import annotations

from edgeproxy.config.deployment import Deployment
from edgeproxy.errors import QuotaExceeded, RateLimited
from edgeproxy.routing.access import ClientKey, KeyUsage, UsageBlock, cost_usd, usage_block
from edgeproxy.state.store import SpendSink

KEY_USAGE_RETENTION_S = 3600


def enforce_key_usage(key: ClientKey | None, usage: KeyUsage | None, now: float) -> None:
    """Raise 429 when ``key`` is over its tpm limit, or ``insufficient_quota`` over its budget."""
    if key is None or usage is None:
        return
    blocked = usage_block(key, usage, now)
    if blocked is None:
        return
    reason, wait = blocked
    if reason is UsageBlock.BUDGET:
        raise QuotaExceeded("This API key has used its whole budget.")
    raise RateLimited("Rate limit reached for this API key (tokens per minute).", retry_after=wait)


async def record_key_usage(
    store: SpendSink,
    key: ClientKey,
    dep: Deployment,
    minute: int,
    prompt_tokens: int,
    completion_tokens: int,
) -> None:
    """Add one answer's tokens (to the minute bucket only if the key has a tpm limit) and cost."""
    tokens = prompt_tokens + completion_tokens
    await store.record_key_usage(
        key.id,
        minute if key.tpm_limit is not None else None,
        tokens,
        cost_usd(dep, prompt_tokens, completion_tokens),
        minute * 60.0 + KEY_USAGE_RETENTION_S,
    )
