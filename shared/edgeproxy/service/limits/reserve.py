"""Exact client-key ``tpm_limit`` and ``budget_usd``: the estimate reserved before the call.

As the pool's tpm admission does (``routing/estimates/tokens.py``): before the
request is routed, the key's verdict (``routing.judge``, given ``estimate``)
names its token estimate, ADDed to the key's minute bucket, and its cost
estimate (the estimate at the highest price in the pool), ADDed to the key's
spend, each conditionally (``service.limits.enforcement``, with the rpm count
at the same moment); when the answer has been counted, the estimate is taken
back through the same counter path as the actual usage, so the actual never
lands after the release.

The estimate is ``routing.estimates.tokens.key_estimate``: the prompt's conservative
bound scaled by the pool's calibration (the highest ratio of reported to
estimated prompt tokens among its deployments for the request's protocol,
``service.limits.calibrations``),
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

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass

from edgeproxy.config.deployment import Deployment
from edgeproxy.config.models import GatewayConfig
from edgeproxy.routing.access import TOKENS_PER_PRICE_UNIT
from edgeproxy.routing.estimates.tokens import key_estimate
from edgeproxy.routing.judge.ruling import Estimate, KeyPlan, KeySnapshot, judge
from edgeproxy.service.limits.calibrations import Calibrations
from edgeproxy.service.limits.enforcement import (
    RequestCounter,
    Reservation,
    count_request,
    planned,
)
from edgeproxy.service.limits.parallel import KeyParallel, KeySlot
from edgeproxy.service.outcomes import Outcomes
from edgeproxy.service.request import ProxyRequest


def price_bound(pool: Sequence[Deployment]) -> float:
    """The highest price per token in ``pool`` (input, output or a prompt-cache write, which
    may cost more than input: the reservation stays a bound), in USD."""
    prices = [
        p
        for d in pool
        for p in (d.input_price_per_mtok, d.output_price_per_mtok, d.cache_write_price_per_mtok)
        if p
    ]
    return max(prices, default=0.0) / TOKENS_PER_PRICE_UNIT


def estimate(req: ProxyRequest, pool: Sequence[Deployment], ratio: float = 1.0) -> Estimate | None:
    """What ``req`` is expected to use, for its key's tpm limit and budget (None: its key
    has neither). ``ratio``: the pool's prompt calibration (``service.limits.calibrations``)."""
    if req.key is None or not req.key.tracks_usage:
        return None
    tokens = key_estimate(req.body, req.operation, ratio)
    return Estimate(tokens, tokens * price_bound(pool))


def key_snapshot(
    req: ProxyRequest, config: GatewayConfig, calibrations: Calibrations
) -> KeySnapshot:
    """What the judge decides ``req``'s key on: the key, the model by its names, and the
    estimate against the pool that may serve it (its calibration's ratio for the request's
    protocol applied)."""
    pool = priced_pool(config, req.model)
    usage = estimate(req, pool, calibrations.ratio(pool, req.protocol))
    return KeySnapshot(req.key, req.model, config.names_of(req.model), usage)


@dataclass(frozen=True, slots=True)
class Admission:
    """A request its key admitted at ``now``: the plan of the writes that hold it to the
    key's limits, and the fleet slot it holds until its answer is over (None: no cap)."""

    plan: KeyPlan | None
    slot: KeySlot | None
    now: float


async def counted(
    store: RequestCounter,
    slots: KeyParallel,
    req: ProxyRequest,
    config: GatewayConfig,
    calibrations: Calibrations,
    now: float,
) -> Admission:
    """The key's verdict on ``req`` at ``now`` (``routing.judge``: its status, its models, its
    fleet slots, rpm, tpm and budget together) and its first writes made: the slot, then
    the rpm count (a refused count gives the slot back). The plan's reservations follow
    (``enforcement.reserve_usage``) once the request's record is open, so a slot or rpm
    refusal, as before routing starts, leaves no record, and a tpm or budget one does."""
    plan = planned(judge(key_snapshot(req, config, calibrations), now))
    slot = await slots.hold(plan, req, config)
    try:
        await count_request(store, plan, req.key, now)
    except BaseException:
        if slot is not None:
            await slot.release()
        raise
    return Admission(plan, slot, now)


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
