"""A client key's tokens and spend, fed by outcomes.

The limits are held by reservations made before routing
(``service/limits/reserve.py``); this counts each answer's actual usage.
"""

from __future__ import annotations

from edgeproxy.config.deployment import Deployment
from edgeproxy.routing.access import ClientKey, cost_usd, spend_account
from edgeproxy.routing.judge.ruling import KEY_USAGE_RETENTION_S
from edgeproxy.state.store import SpendSink

__all__ = ["KEY_USAGE_RETENTION_S", "record_key_usage"]


async def record_key_usage(
    store: SpendSink,
    key: ClientKey,
    dep: Deployment,
    minute: int,
    prompt_tokens: int,
    completion_tokens: int,
    cache_read_tokens: int = 0,
    cache_write_tokens: int = 0,
) -> None:
    """Add one answer's tokens (to the minute bucket only if the key has a tpm limit) and cost
    (prompt-cache reads and writes at their own prices, ``cost_usd``)."""
    tokens = prompt_tokens + completion_tokens
    await store.record_key_usage(
        spend_account(key, minute * 60.0),  # the budget period the answer's minute is in
        minute if key.tpm_limit is not None else None,
        tokens,
        cost_usd(dep, prompt_tokens, completion_tokens, cache_read_tokens, cache_write_tokens),
        minute * 60.0 + KEY_USAGE_RETENTION_S,
    )
