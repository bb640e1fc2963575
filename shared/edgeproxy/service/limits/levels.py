"""The limits of a key's team, its organization and the end user a request names, held exactly.

After the key's own reservations (``service.limits.enforcement``), a routed
request of a key in a team is charged against every level above it that
sets a limit (``routing.judge.levels.charges``): one store transaction
(``LevelStore.reserve_levels``) counts it under each rpm limit, adds its
token estimate under each tpm limit and its cost estimate under each
budget, and takes one slot of each ``max_parallel_requests``, all or
nothing. A key without a team (and a team whose levels set no limit) makes
no call here. When the answer is over (a JSON answer counted, a stream
ended, an error), ``LevelHold.settle`` adds the actual usage minus the
estimate at every level and frees the slots, in one transaction again.

Teams and organizations are read through a cache (``GroupCache``, the key
cache's TTL), so the request path pays only the transaction. A slot is a
lease: it lapses at the request's deadline plus ``GRACE_S``, so a process
that dies holding one frees it by then.
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from edgeproxy.config.models import GatewayConfig
from edgeproxy.errors import StoreError, StoreUnavailable
from edgeproxy.routing.access import ClientKey
from edgeproxy.routing.deadlines import Budget
from edgeproxy.routing.estimates.tokens import key_estimate
from edgeproxy.routing.hierarchy import Group, Level
from edgeproxy.routing.judge.levels import (
    LevelCharge,
    charges,
    level_limits,
    level_refused,
    would_refuse,
)
from edgeproxy.routing.judge.reasons import Write
from edgeproxy.routing.judge.ruling import Estimate
from edgeproxy.service.limits.calibrations import Calibrations
from edgeproxy.service.limits.parallel import GRACE_S
from edgeproxy.service.limits.reserve import price_bound, priced_pool
from edgeproxy.service.request import ProxyRequest, Tally
from edgeproxy.state.levels import LevelStore, Settlement
from edgeproxy.state.store import TeamStore

logger = logging.getLogger(__name__)

CONFLICT_ROUNDS = 8  # transactions lost to concurrent ones on the same item, then a 503
CONFLICT_BACKOFF_S = 0.01
SLOT_READS = 3  # re-reads of a level's free slots (each lost to a racer) before a 429
RETRY_AFTER_S = 1.0


class Store(LevelStore, TeamStore, Protocol):
    """The level counters and the teams' reads."""


class GroupCache:
    """Teams and organizations as read, trusted for ``ttl`` seconds (a change of a limit
    reaches every process within it, as a key's does)."""

    def __init__(self, store: TeamStore, clock: Callable[[], float], ttl: float = 10.0) -> None:
        self._store = store
        self._clock = clock
        self._ttl = ttl
        self._held: dict[tuple[Level, str], tuple[float, Group | None]] = {}

    async def get(self, kind: Level, group_id: str) -> Group | None:
        now = self._clock()
        cached = self._held.get((kind, group_id))
        if cached is not None and now - cached[0] < self._ttl:
            return cached[1]
        group = await self._store.get_group(kind, group_id)
        self._held[(kind, group_id)] = (now, group)
        return group


@dataclass(slots=True)
class LevelHold:
    """What one request holds at the levels above its key; ``settle`` ends it (once)."""

    store: LevelStore
    charges: tuple[LevelCharge, ...]
    slots: list[int | None]
    holder: str
    until: float  # when its slots lapse if never freed (its lease)
    _settled: bool = field(default=False)

    async def settle(self, used: Tally) -> None:
        """``used`` (the actual usage) minus the estimate at every level, and the slots freed."""
        if self._settled:
            return
        self._settled = True
        settled = [
            Settlement(
                c,
                used.tokens - c.tokens,
                (used.spend_usd - c.spend_usd) if c.budget is not None else 0.0,
                self.slots[i],
            )
            for i, c in enumerate(self.charges)
        ]
        try:
            await asyncio.shield(self.store.settle_levels(settled, self.holder))
        except StoreError as exc:  # an overcount until the minute ends; never an overshoot
            logger.warning("could not settle a request's levels: %s", type(exc).__name__)


def level_estimate(
    req: ProxyRequest, config: GatewayConfig, calibrations: Calibrations
) -> Estimate:
    """What ``req`` is expected to use, as the key's estimate is made (whatever the key's
    own limits): the calibrated prompt bound plus the output limit, at the pool's top price."""
    pool = priced_pool(config, req.model)
    tokens = key_estimate(req.body, req.operation, calibrations.ratio(pool, req.protocol))
    return Estimate(tokens, tokens * price_bound(pool))


class Levels:
    """Charges this process's requests against the levels above their keys."""

    def __init__(
        self,
        store: Store,
        clock: Callable[[], float],
        rng: random.Random,
        max_total_ms: int | None = None,
        cache_ttl: float = 10.0,
    ) -> None:
        self._store = store
        self._clock = clock
        self._rng = rng
        self._max_total_ms = max_total_ms
        self.groups = GroupCache(store, clock, cache_ttl)

    async def _levels(self, key: ClientKey) -> tuple[Group | None, Group | None]:
        if key.team_id is None:
            return None, None
        team = await self.groups.get(Level.TEAM, key.team_id)
        org = None
        if team is not None and team.parent is not None:
            org = await self.groups.get(Level.ORGANIZATION, team.parent)
        return team, org

    async def reserve(
        self,
        req: ProxyRequest,
        config: GatewayConfig,
        calibrations: Calibrations,
        now: float,
    ) -> LevelHold | None:
        """``req`` charged at every level above its key at ``now`` (None: none sets a limit);
        the refusal of the first level that does not let it through, naming the level."""
        key = req.key
        if key is None or key.team_id is None:
            return None
        team, org = await self._levels(key)
        limits = level_limits(key, team, org, req.end_user)
        if not limits:
            return None
        planned = charges(limits, level_estimate(req, config, calibrations), now)
        for c in planned:
            if c.parallel == 0:
                raise level_refused(c.limits, Write.PARALLEL, now).error()
            if c.rpm == 0:
                raise level_refused(c.limits, Write.RPM, now).error()
            if c.budget is not None and c.budget <= 0:
                raise level_refused(c.limits, Write.SPEND, now).error()
        policies = config.router.execution_policies[req.operation]
        deadline = policies.stream if req.stream else policies.json_
        total_s = Budget.from_deadline(deadline, 0.0, self._max_total_ms).total_ms / 1000.0
        holder = f"{req.request_id}:{self._rng.getrandbits(64):016x}"
        return await self._charged(planned, holder, now + total_s + GRACE_S, now)

    async def explain(
        self,
        req: ProxyRequest,
        config: GatewayConfig,
        calibrations: Calibrations,
        now: float,
    ) -> dict[str, Any]:
        """The levels above ``req``'s key as its reservation at ``now`` would meet them, read
        only (the team and organization as stored now, not cached): each level's limits and
        counters, and ``refused_by``, the refusal naming the level it would get (None: none)."""
        key = req.key
        if key is None or key.team_id is None:
            return {"levels": [], "refused_by": None}
        team = await self._store.get_group(Level.TEAM, key.team_id)
        org = None
        if team is not None and team.parent is not None:
            org = await self._store.get_group(Level.ORGANIZATION, team.parent)
        limits = level_limits(key, team, org, req.end_user)
        planned = charges(limits, level_estimate(req, config, calibrations), now)
        counts = await self._store.level_counts(planned, now)
        rows = [
            {
                "level": c.limits.level.value,
                "id": c.limits.id,
                "rpm_limit": c.rpm,
                "requests_this_minute": n.requests,
                "tpm_limit": c.tpm,
                "tokens_this_minute": n.tokens,
                "budget_usd": c.budget,
                "spend_usd": round(n.spend_usd, 6),
                "max_parallel_requests": c.parallel,
                "in_flight": n.in_flight,
                "estimate_tokens": c.tokens,
                "estimate_usd": round(c.spend_usd, 6),
            }
            for c, n in zip(planned, counts, strict=True)
        ]
        refusal = would_refuse(planned, counts)
        if refusal is None:
            return {"levels": rows, "refused_by": None}
        index, write = refusal
        refused = level_refused(planned[index].limits, write, now)
        return {
            "levels": rows,
            "refused_by": {
                "level": refused.level,
                "id": planned[index].limits.id,
                "reason": refused.reason.value,
                "message": refused.message,
                "retry_after_s": refused.retry_after,
            },
        }

    async def _charged(
        self, planned: Sequence[LevelCharge], holder: str, until: float, now: float
    ) -> LevelHold:
        slots: list[int | None] = [
            None if c.parallel is None else self._rng.randrange(c.parallel) for c in planned
        ]
        looked: dict[int, int] = {}  # how often each charge's free slots were read
        conflicts = 0
        while True:
            failed = await self._store.reserve_levels(planned, slots, holder, until, now)
            if failed is None:
                return LevelHold(self._store, tuple(planned), slots, holder, until)
            if failed.charge is None or failed.write is None:
                conflicts += 1
                if conflicts >= CONFLICT_ROUNDS:
                    raise StoreUnavailable(
                        "The store is busy with this team's requests; retry.",
                        retry_after=RETRY_AFTER_S,
                    )
                await asyncio.sleep(self._rng.uniform(0, CONFLICT_BACKOFF_S * 2**conflicts))
                continue
            c = planned[failed.charge]
            cap = c.parallel
            reads = looked.get(failed.charge, 0)
            if failed.write is not Write.PARALLEL or cap is None or reads >= SLOT_READS:
                raise level_refused(c.limits, failed.write, now).error()
            # The slot tried was held: read which are free, and take one of those.
            looked[failed.charge] = reads + 1
            free = await self._store.free_level_slots(c.limits.partition, cap, now)
            if not free:
                raise level_refused(c.limits, Write.PARALLEL, now).error()
            slots[failed.charge] = self._rng.choice(free)


def settled(
    after: Callable[[], Awaitable[None]], held: LevelHold | None, used: Tally
) -> Callable[[], Awaitable[None]]:
    """``after`` (a stream's success writes and the key's release), then ``held`` settled
    with ``used``, even when ``after`` fails."""
    if held is None:
        return after

    async def run() -> None:
        try:
            await after()
        finally:
            await held.settle(used)

    return run
