"""The binding lifecycle on a virtual clock: the service's outcome writes on a real store.

Each step reads the pool as the router does (``read_pool``), picks with the
pure core, and records the success with ``Outcomes``, all at a ``now`` the
test sets. Nothing sleeps: the TTL passes by moving the clock.
"""

from __future__ import annotations

import asyncio
import random
import time

from edgeproxy.config.deployment import Deployment, ProviderKind
from edgeproxy.config.router import CircuitSettings, StickySettings
from edgeproxy.routing.selection import Pick, RouteRequest, next_deployment
from edgeproxy.routing.snapshot import Binding, BindingKey
from edgeproxy.service.admin.bindings import invalidate_pool, unbind
from edgeproxy.service.admission import Attempt
from edgeproxy.service.outcomes import Outcomes
from edgeproxy.service.pool import PoolContext
from edgeproxy.service.telemetry import NoTelemetry
from edgeproxy.state.dynamodb.dynamo import DynamoStore
from edgeproxy.state.store import SnapshotRequest

POOL = "fast-chat"
TTL = 100
DEPLOYMENTS = [
    Deployment(
        id=name,
        model=POOL,
        provider=ProviderKind.OPENAI_COMPAT,
        base_url="http://127.0.0.1:9/v1",
        upstream_model="m",
    )
    for name in ("a", "b")
]


class Clock:
    """A settable clock; starts at the real time so the items' TTLs look plausible."""

    def __init__(self) -> None:
        self.now = float(int(time.time()))

    def __call__(self) -> float:
        return self.now


class Service:
    """Read, pick and record the way ``Router`` and ``Outcomes`` do, for one caller."""

    def __init__(self, store: DynamoStore, clock: Clock, caller: str = "key:alice") -> None:
        self.store = store
        self.clock = clock
        self.key = BindingKey(caller, POOL, "openai.chat")
        self.outcomes = Outcomes(store, clock, random.Random(7), NoTelemetry())

    async def read(self) -> PoolContext:
        minute = int(self.clock() // 60)
        snapshot = await self.store.read_pool(
            SnapshotRequest(POOL, ["a", "b"], [d.domain for d in DEPLOYMENTS], minute, self.key)
        )
        sticky = StickySettings(idle_ttl_seconds=TTL)
        return PoolContext(POOL, DEPLOYMENTS, snapshot, self.key, sticky, CircuitSettings())

    def pick(self, ctx: PoolContext) -> Pick:
        pick = next_deployment(
            ctx.deployments,
            ctx.snapshot,
            RouteRequest(caller=self.key.caller),
            self.clock(),
            random.Random(1),
        )
        assert isinstance(pick, Pick)
        return pick

    async def succeed(self, ctx: PoolContext, dep_id: str, *, sticky: bool = False) -> None:
        dep = next(d for d in DEPLOYMENTS if d.id == dep_id)
        now = self.clock()
        attempt = Attempt(dep, int(now // 60), now, probe=False, sticky=sticky, owner="t")
        await self.outcomes.success(
            ctx, attempt, prompt_tokens=1, completion_tokens=1, latency_s=0.1
        )

    async def stored(self) -> Binding | None:
        return (await self.read()).snapshot.binding


async def test_expiry_renewal_and_replacement_on_a_virtual_clock(store: DynamoStore) -> None:
    clock = Clock()
    t0 = clock.now
    svc = Service(store, clock)

    first = svc.pick(await svc.read())
    assert not first.sticky
    bound = first.deployment.id
    other = "b" if bound == "a" else "a"
    await svc.succeed(await svc.read(), bound)
    created = await svc.stored()
    assert created is not None
    assert (created.deployment_id, created.expires_at, created.version) == (bound, t0 + TTL, 1)

    clock.now = t0 + TTL / 2 - 1  # more than half the TTL left: routed, but nothing written
    ctx = await svc.read()
    assert svc.pick(ctx).sticky
    await svc.succeed(ctx, bound, sticky=True)
    assert await svc.stored() == created

    clock.now = t0 + TTL / 2 + 1  # less than half left: the success renews
    await svc.succeed(await svc.read(), bound, sticky=True)
    renewed = await svc.stored()
    assert renewed is not None
    assert (renewed.expires_at, renewed.version) == (clock.now + TTL, 2)

    clock.now = renewed.expires_at - 0.001  # still valid a moment before the idle TTL ends
    assert svc.pick(await svc.read()).sticky

    clock.now = renewed.expires_at  # expired: still stored (TTL deletion is lazy), but ignored
    ctx = await svc.read()
    assert ctx.snapshot.binding == renewed
    assert not svc.pick(ctx).sticky
    await svc.succeed(ctx, other)  # the next success replaces the expired item
    replaced = await svc.stored()
    assert replaced is not None
    assert (replaced.deployment_id, replaced.expires_at, replaced.version) == (
        other,
        clock.now + TTL,
        3,
    )


async def test_invalidation_and_unbind(store: DynamoStore) -> None:
    clock = Clock()
    svc = Service(store, clock, caller="ip:2001:db8:0:7::/64")
    await svc.succeed(await svc.read(), "a")

    generation = await invalidate_pool(store, POOL)
    assert generation == 1
    ctx = await svc.read()
    assert ctx.snapshot.binding is not None  # the item is still there ...
    assert not svc.pick(ctx).sticky  # ... but from an older generation
    await svc.succeed(ctx, "b")
    fresh = await svc.stored()
    assert fresh is not None
    assert (fresh.deployment_id, fresh.generation) == ("b", 1)
    assert svc.pick(await svc.read()).sticky

    # An IP from the same /64 names the same caller.
    removed = await unbind(store, "2001:db8:0:7::abcd", POOL)
    assert removed == fresh
    assert await svc.stored() is None
    assert await unbind(store, "2001:db8:0:7::abcd", POOL) is None


async def test_concurrent_creators_keep_the_first_writer(store: DynamoStore) -> None:
    clock = Clock()
    svc = Service(store, clock)
    # Two instances read "no binding" at the same moment, then succeed on different deployments.
    first, second = await svc.read(), await svc.read()
    await svc.succeed(first, "a")
    await svc.succeed(second, "b")  # its conditional create loses; no error, no overwrite
    won = await svc.stored()
    assert won is not None
    assert (won.deployment_id, won.version) == ("a", 1)

    racer = Service(store, clock, caller="key:bob")
    contexts = [await racer.read() for _ in range(2)]
    await asyncio.gather(racer.succeed(contexts[0], "a"), racer.succeed(contexts[1], "b"))
    raced = await racer.stored()
    assert raced is not None
    assert raced.version == 1
