"""The exact response cache at the edge (``docs/caching.md``): a hit, or the answer stored.

    plan (the rule naming the request's key, team or pool; its controls; its digest)
      lookup (unless ``no-cache``/``no-store``): one eventually consistent Query
        hit  -> admitted (the key's rpm counted, no tpm or budget reservation),
                the stored answer replayed (``x-edgeproxy-cache: hit``, ``Age``),
                logged with the cost it saved; no upstream call
        miss -> [``coalesce``: the fleet-wide lease of the digest, or a bounded wait
                 for the identical request holding it, then a strong re-read]
                the pipeline's own answer, captured (``api.stored.capture``) and
                stored when it is a complete success (unless ``no-store``)

The rules (which rule, the key, the controls) are ``routing.cache``'s; the
answers are ``state.answers``'. A request with an ``Idempotency-Key`` takes
the idempotency path instead (``api.idempotent``): it is never cached.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from typing import Any, Protocol

from starlette.background import BackgroundTask
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import Receive, Scope, Send

from edgeproxy.api.codec import Codec
from edgeproxy.api.deprecation import notice
from edgeproxy.api.identity import Identity
from edgeproxy.api.stored.capture import Captured
from edgeproxy.api.stored.replay import replayed
from edgeproxy.config.cache import CacheRule
from edgeproxy.config.models import GatewayConfig
from edgeproxy.errors import AnswerTooLarge, IdempotencyInProgress, StoreError
from edgeproxy.routing.cache import (
    STATUS_HEADER,
    TTL_HEADER,
    Controls,
    cache_digest,
    controls,
    rule_for,
    scope_id,
)
from edgeproxy.service.gateway import Gateway
from edgeproxy.service.idempotency import Owned, Replay
from edgeproxy.service.request import ProxyRequest
from edgeproxy.state.answers import StoredAnswer

logger = logging.getLogger(__name__)
COALESCE_SCOPE = "cache"  # the lease partition of identical requests in flight


class Releasable(Protocol):
    """What the request holds until its answer is over (``pipeline.Held``)."""

    fleet: Any

    async def release(self) -> None:
        """Give it back (idempotent)."""
        ...


@dataclass(frozen=True, slots=True)
class Planned:
    """A request the cache is on for: its rule, its controls and its digest."""

    rule: CacheRule
    controls: Controls
    digest: str

    @property
    def ttl_s(self) -> int:
        return self.controls.ttl_s or self.rule.ttl_seconds


@dataclass(frozen=True, slots=True)
class Produced:
    """The pipeline's answer to a request: the response, and the checks it passes once
    sent (``complete``: whole; ``clean``: a stream without anomalies)."""

    response: Response
    relayed: bool  # the response releases what the request holds itself (a stream)
    complete: Callable[[], bool]


Produce = Callable[[ProxyRequest], Awaitable[Produced]]


def plan_of(
    request: Request, config: GatewayConfig, who: Identity, req: ProxyRequest, body: Any
) -> Planned | None:
    """The cache's plan for ``req`` (None: no rule turns it on, or the request asks for what
    only a fresh answer has: the routing metadata, an admin's pinned deployment); a bad
    TTL header is a 400."""
    ctl = controls(request.headers.get("cache-control"), request.headers.get(TTL_HEADER))
    settings = config.cache
    if not settings.any or req.want_routing or req.pin is not None:
        return None
    key = who.key
    team = key.team_id if key is not None else None
    pool = next((p for p in settings.pools if config.canonical(p) == req.model), req.model)
    rule = rule_for(settings, pool, team, key.id if key is not None else None)
    if rule is None:
        return None
    caller = key.id if key is not None else who.caller
    scope = scope_id(rule.scope, caller, team)
    return Planned(rule, ctl, cache_digest(scope, req.protocol, req.model, body))


async def cached(
    codec: Codec,
    gateway: Gateway,
    config: GatewayConfig,
    req: ProxyRequest,
    requested: str,
    held: Releasable,
    plan: Planned,
    produce: Produce,
) -> Response:
    """The response to a request under ``plan``; owns ``held`` (every path gives it back)."""
    store = gateway.store
    try:
        if plan.controls.lookup:
            stored = await _lookup(gateway, plan.digest)
            if stored is not None:
                return await _hit(codec, gateway, config, req, requested, held, stored)
        owned: Owned | None = None
        if plan.rule.coalesce and plan.controls.lookup and plan.controls.store:
            owned, stored = await _coalesced(gateway, config, req, plan)
            if stored is not None:
                return await _hit(codec, gateway, config, req, requested, held, stored)
    except BaseException:
        await held.release()
        raise
    status = "miss" if plan.controls.lookup else "bypass"
    first = replace(req, cache=status)
    try:
        produced = await produce(first)
    except BaseException:
        await held.release()
        await _release(gateway, owned)
        raise
    if not produced.relayed:
        await held.release()
    produced.response.headers[STATUS_HEADER] = status
    if not plan.controls.store:
        return _Releasing(produced.response, gateway, owned)

    async def keep(answer: StoredAnswer) -> None:
        try:
            await store.put_answer(plan.digest, answer, answer.stored_at + plan.ttl_s)
        except (AnswerTooLarge, StoreError) as exc:
            logger.info("an answer was not stored in the cache: %s", type(exc).__name__)

    captured = Captured(
        produced.response,
        keep,
        now=gateway.now,
        limit=plan.rule.max_answer_bytes,
        stream=req.stream,
        complete=produced.complete,
        meta=lambda: {"cost_usd": first.tally.spend_usd, "tokens": first.tally.tokens},
    )
    return _Releasing(captured, gateway, owned)


async def _lookup(
    gateway: Gateway, digest: str, *, consistent: bool = False
) -> StoredAnswer | None:
    """The stored answer (a store failure is a miss: the cache never fails a request)."""
    try:
        return await gateway.store.get_answer(digest, gateway.now(), consistent=consistent)
    except StoreError as exc:
        logger.warning("the response cache could not be read: %s", type(exc).__name__)
        return None


async def _coalesced(
    gateway: Gateway, config: GatewayConfig, req: ProxyRequest, plan: Planned
) -> tuple[Owned | None, StoredAnswer | None]:
    """The digest's lease (this request calls the upstream), or the answer of the identical
    request that held it (a strong read once it let go); neither after the bounded wait."""
    deadline_s = gateway.deadline_s(req, config)
    wait_s = plan.rule.coalesce_wait_seconds
    try:
        got = await gateway.leases.acquire(
            COALESCE_SCOPE, plan.digest, plan.digest, deadline_s, wait_s=wait_s
        )
    except (IdempotencyInProgress, StoreError):
        return None, None  # waited long enough (or no lease): this request calls itself
    if isinstance(got, Replay):  # never finished by the cache; a lease is only released
        return None, None
    stored = await _lookup(gateway, plan.digest, consistent=True)
    if stored is not None:
        await gateway.leases.release(got)
        return None, stored
    return got, None


async def _release(gateway: Gateway, owned: Owned | None) -> None:
    if owned is not None:
        await gateway.leases.release(owned)


async def _hit(
    codec: Codec,
    gateway: Gateway,
    config: GatewayConfig,
    req: ProxyRequest,
    requested: str,
    held: Releasable,
    stored: StoredAnswer,
) -> Response:
    """``stored`` replayed: admitted as a request (rpm), nothing reserved, no upstream call."""
    try:
        admission = await gateway.admit(req, config)  # a refusal raises: a request over limits
        held.fleet = admission.slot
        # The levels above the key count it too: charged and settled at once with the
        # request's tally, which is zero (no tokens, no spend), as a failed call settles.
        above = await gateway.levels.reserve(req, config, gateway.calibrations, admission.now)
        if above is not None:
            await above.settle(req.tally)
    finally:
        await held.release()
    deployment = dict(stored.headers).get("x-edgeproxy-deployment")
    saved = float(stored.meta.get("cost_usd", 0.0) or 0.0)
    after = gateway.cached(req, config, deployment, saved)
    age = max(0, int(gateway.now() - stored.stored_at))
    headers = {
        **codec.headers(req.request_id),
        **notice(config, requested),
        STATUS_HEADER: "hit",
        "age": str(age),
    }
    response = replayed(stored, headers)
    response.background = BackgroundTask(after)
    return response


class _Releasing(Response):
    """``inner``, sent unchanged; then the coalescing lease given back, however it ended
    (a waiter then reads the stored answer, or calls the upstream itself)."""

    def __init__(self, inner: Response, gateway: Gateway, owned: Owned | None) -> None:
        # Not ``super().__init__``: this response renders nothing of its own.
        self.inner = inner
        self.status_code = inner.status_code
        self.background = None
        self._gateway = gateway
        self._owned = owned

    @property
    def headers(self) -> Any:
        return self.inner.headers

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await self.inner(scope, receive, send)
        finally:
            await _release(self._gateway, self._owned)
