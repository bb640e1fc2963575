"""Exact client-key ``tpm_limit`` and ``budget_usd``: reserve an estimate before the call.

As the pool's tpm admission does (``routing/estimates/tokens.py``): before the
request is routed, its token estimate is ADDed to the key's minute bucket
and its cost estimate (the estimate at the highest price in the pool) to
the key's spend, each conditionally (``state/dynamo_key_reserve.py``);
when the answer has been counted, the estimate is taken back through the
same counter path as the actual usage, so the actual never lands after the
release. A refused reservation is the same 429 the read check gives.

The estimate is ``routing.estimates.tokens.key_estimate``: the prompt's conservative
bound scaled by the pool's calibration (the highest ratio of reported to
estimated prompt tokens among its deployments, ``service.limits.calibrations``),
plus the request's output limit. What remains (the README's bound): an
admitted request whose actual usage exceeds its estimate overshoots by that
excess: the prompt the calibrated bound missed, and output beyond the
request's ``max_tokens`` (only an upstream ignoring it answers more); a request whose estimate
alone exceeds the limit is admitted only into an empty minute or budget;
a reservation whose request never finishes (the process dies, the client
drops a stream mid-way) stays counted: the minute bucket expires, spend
keeps it (an overcount, never an overshoot).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from edgeproxy.config.deployment import Deployment
from edgeproxy.config.models import GatewayConfig
from edgeproxy.errors import QuotaExceeded, RateLimited, StoreError
from edgeproxy.routing.access import (
    TOKENS_PER_PRICE_UNIT,
    ClientKey,
    period_end,
    seconds_to_next_minute,
    spend_account,
)
from edgeproxy.routing.estimates.tokens import key_estimate
from edgeproxy.service.limits.usage import KEY_USAGE_RETENTION_S
from edgeproxy.service.outcomes import Outcomes
from edgeproxy.service.request import ProxyRequest
from edgeproxy.state.store import KeyReserveStore

logger = logging.getLogger(__name__)

# Counts a key's usage the way answers are counted (``Outcomes.key_usage``; negative: a release).
Counter = Callable[[str, int | None, int, float, float], Awaitable[None]]


@dataclass(frozen=True, slots=True)
class Reservation:
    """What one request reserved; ``release`` takes it back (once)."""

    key_id: str  # the key's spend account (``spend_account``: its id, or id@period)
    minute: int | None  # the bucket reserved in (None: no tpm limit)
    tokens: int
    spend_usd: float
    expires_at: float

    async def release(self, count: Counter) -> None:
        """Take the estimate back (after the actual usage was counted)."""
        try:
            await asyncio.shield(
                count(self.key_id, self.minute, -self.tokens, -self.spend_usd, self.expires_at)
            )
        except StoreError as exc:  # an overcount until the minute ends; never an overshoot
            logger.warning("could not release a key reservation: %s", type(exc).__name__)


def price_bound(pool: Sequence[Deployment]) -> float:
    """The highest price per token in ``pool`` (input or output), in USD."""
    prices = [p for d in pool for p in (d.input_price_per_mtok, d.output_price_per_mtok) if p]
    return max(prices, default=0.0) / TOKENS_PER_PRICE_UNIT


async def reserve(
    store: KeyReserveStore,
    req: ProxyRequest,
    pool: Sequence[Deployment],
    now: float,
    ratio: float = 1.0,
) -> Reservation | None:
    """Reserve ``req``'s estimate against its key's limits; 429 when it does not fit.

    ``ratio``: the pool's prompt calibration (``service.limits.calibrations``).
    """
    key: ClientKey | None = req.key
    if key is None or not key.tracks_usage:
        return None
    tokens = key_estimate(req.body, req.operation, ratio)
    minute = int(now // 60)
    expires = minute * 60.0 + KEY_USAGE_RETENTION_S
    spend = tokens * price_bound(pool)
    if key.tpm_limit is not None and not await store.reserve_key_tokens(
        key.id, minute, tokens, key.tpm_limit, expires
    ):
        raise RateLimited(
            "Rate limit reached for this API key (tokens per minute).",
            retry_after=seconds_to_next_minute(now),
        )
    bucket = minute if key.tpm_limit is not None else None
    account = spend_account(key, now)  # this budget period's spend (the key's id: total)
    if not await store.reserve_key_spend(account, tokens, spend, key.budget_usd):
        if bucket is not None:  # undo the tokens part, at once (nothing else was counted)
            await store.reserve_key_tokens(key.id, minute, -tokens, 2**62, expires)
        raise QuotaExceeded(budget_message(key, now))
    return Reservation(account, bucket, tokens, spend, expires)


def budget_message(key: ClientKey, now: float) -> str:
    """The refusal of a spent budget: when it resets, for a periodic one."""
    end = period_end(key.budget_period, now)
    if end is None:
        return "This API key has used its whole budget."
    moment = datetime.fromtimestamp(end, UTC).isoformat().replace("+00:00", "Z")
    return f"This API key has used its {key.budget_period.value} budget; it resets at {moment}."


def priced_pool(config: GatewayConfig, model: str) -> list[Deployment]:
    """The deployments a request for ``model`` may be served by (its pool and fallbacks)."""
    models = {model} | {m for chain in config.fallbacks if chain.model == model for m in chain.to}
    return [d for m in sorted(models) for d in config.pool(m)]


def released(
    after: Callable[[], Awaitable[None]], held: Reservation | None, outcomes: Outcomes
) -> Callable[[], Awaitable[None]]:
    """``after`` (a stream's success write), then the release of ``held``."""
    if held is None:
        return after

    async def run() -> None:
        try:
            await after()
        finally:
            await held.release(outcomes.key_usage)

    return run
