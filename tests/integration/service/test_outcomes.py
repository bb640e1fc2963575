"""Outcome writes against the embedded DynamoDB (real conditional writes).

Each write returns what now stands in the store; the router applies it to
its own view of the pool (``PoolContext.applied``), so these tests check both
the stored item and the returned standing.
"""

from __future__ import annotations

import dataclasses
import random

import pytest

from edgeproxy.config.deployment import Deployment
from edgeproxy.config.router import CircuitSettings, StickySettings
from edgeproxy.routing.faults import Fault, FaultKind
from edgeproxy.routing.snapshot import Circuit, CircuitState
from edgeproxy.routing.verdict import judge
from edgeproxy.service.admission import Attempt
from edgeproxy.service.outcomes import Outcomes
from edgeproxy.service.pool import PoolContext
from edgeproxy.service.sharing.coalescing import CoalescingStore
from edgeproxy.service.telemetry import NoTelemetry
from edgeproxy.state.dynamodb.dynamo import DynamoStore
from edgeproxy.state.store import SnapshotRequest

NOW = 1_000_000.0
DEP = Deployment(
    id="d1",
    model="m",
    provider="openai_compat",
    base_url="http://127.0.0.1:9/v1",
    upstream_model="x",
)


async def _context(store: DynamoStore) -> PoolContext:
    snapshot = await store.read_pool(
        SnapshotRequest(pool="m", deployment_ids=["d1"], domains=[], minute=int(NOW // 60))
    )
    return PoolContext("m", [DEP], snapshot, None, StickySettings(), CircuitSettings())


async def test_an_unused_probe_lease_is_given_back(store: DynamoStore) -> None:
    expired = Circuit("d1", state=CircuitState.OPEN, open_until=NOW - 1, version=1)
    assert await store.write_circuit(expired, 0) is None
    outcomes = Outcomes(store, lambda: NOW, random.Random(1), NoTelemetry())

    first = await _context(store)
    won, standing = await outcomes.take_probe(first, "req-1", DEP)
    assert won
    first = first.applied(standing)
    assert first.snapshot.circuit("d1").probe_owner == "req-1"
    second = await _context(store)
    won, standing = await outcomes.take_probe(second, "req-2", DEP)
    assert not won  # the fleet has one prober
    # The loser learns the winner's lease from the failed condition, without a read.
    assert second.applied(standing).snapshot.circuit("d1").probe_owner == "req-1"

    released = await outcomes.release_probe(first, "req-1", DEP)
    assert first.applied(released).snapshot.circuit("d1").probe_owner is None
    third = await _context(store)
    assert third.snapshot.circuit("d1").probe_owner is None
    assert (await outcomes.take_probe(third, "req-3", DEP))[0]


async def test_release_by_a_non_owner_changes_nothing(store: DynamoStore) -> None:
    expired = Circuit("d1", state=CircuitState.OPEN, open_until=NOW - 1, version=1)
    assert await store.write_circuit(expired, 0) is None
    outcomes = Outcomes(store, lambda: NOW, random.Random(1), NoTelemetry())
    owner = await _context(store)
    assert (await outcomes.take_probe(owner, "req-1", DEP))[0]
    other = await _context(store)
    await outcomes.release_probe(other, "req-2", DEP)
    assert (await _context(store)).snapshot.circuit("d1").probe_owner == "req-1"


class Recorded:
    """A Telemetry that remembers what was counted."""

    def __init__(self) -> None:
        self.counted: list[tuple[str, dict[str, str]]] = []

    def count(self, name: str, value: float = 1, /, **dimensions: str) -> None:
        self.counted.append((name, dimensions))

    def times(self, name: str, **dimensions: str) -> int:
        return sum(n == name and d == dimensions for n, d in self.counted)


async def test_failures_and_transitions_are_counted(store: DynamoStore) -> None:
    telemetry = Recorded()
    outcomes = Outcomes(store, lambda: NOW, random.Random(1), telemetry)
    settings = CircuitSettings(allowed_fails=1)
    fault = Fault(FaultKind.HTTP, "bad gateway", status=502)
    for n in range(2):
        ctx = dataclasses.replace(await _context(store), circuit=settings)
        attempt = Attempt(DEP, int(NOW // 60), NOW - 1, False, False, f"req-{n}")
        standing = await outcomes.failure(ctx, attempt, judge(fault), first=True)
        # What the write left is handed back: one failure counted, then the circuit open.
        expected = CircuitState.OPEN if n else CircuitState.CLOSED
        assert [(c.state, c.version) for c in standing.circuits] == [(expected, n + 1)]
    # Dimensions name the deployment and pool (bounded by configuration), never a caller.
    assert telemetry.times("Attempts", outcome="failure", deployment="d1", model="m") == 2
    assert (
        telemetry.times("AttemptFailures", deployment="d1", model="m", **{"class": "transient"})
        == 2
    )
    # The second failure opened it.
    assert telemetry.times("CircuitTransitions", deployment="d1", to_state="open") == 1
    assert (await _context(store)).snapshot.circuit("d1").state is CircuitState.OPEN


async def test_a_throttle_hands_back_the_capacity_circuit_and_drops_nothing_else(
    store: DynamoStore,
) -> None:
    outcomes = Outcomes(store, lambda: NOW, random.Random(1), NoTelemetry())
    ctx = await _context(store)
    attempt = Attempt(DEP, int(NOW // 60), NOW - 1, False, False, "req-1")
    fault = Fault(FaultKind.HTTP, "slow down", status=429, retry_after=7.0)
    standing = await outcomes.failure(ctx, attempt, judge(fault), first=True)
    assert [(c.domain, c.throttled_until) for c in standing.capacities] == [(DEP.domain, NOW + 7)]
    assert standing.circuits == ()  # throttles never move the deployment's own circuit
    assert ctx.applied(standing).snapshot.capacity(DEP.domain).throttled_until == NOW + 7
    stored = await store.read_pool(
        SnapshotRequest(
            pool="m", deployment_ids=["d1"], domains=[DEP.domain], minute=int(NOW // 60)
        )
    )
    assert stored.capacity(DEP.domain).throttled_until == NOW + 7


async def test_counters_go_to_the_sharing_buffer_and_circuits_to_the_store(
    store: DynamoStore,
) -> None:
    # A long-lived process: the counters are coalesced, every other write is the store's own.
    shared = CoalescingStore(store, 3600.0)  # a window that only the shutdown ends
    outcomes = Outcomes(store, lambda: NOW, random.Random(1), NoTelemetry(), counters=shared)
    ctx = dataclasses.replace(await _context(store), circuit=CircuitSettings(allowed_fails=0))
    attempt = Attempt(DEP, int(NOW // 60), NOW - 1, False, False, "req-1")
    fault = Fault(FaultKind.HTTP, "bad gateway", status=502)
    await outcomes.failure(ctx, attempt, judge(fault), first=True)
    assert (await _context(store)).snapshot.circuit("d1").state is CircuitState.OPEN
    minute = int(NOW // 60)
    assert sum(u.failures for u in await store.read_usage("d1", minute, minute)) == 0
    assert shared.counters is not None
    assert shared.counters.pending == 1
    await shared.aclose()
    assert sum(u.failures for u in await store.read_usage("d1", minute, minute)) == 1


async def test_a_keys_release_waits_for_the_buffer_its_actual_spend_is_in(
    store: DynamoStore,
) -> None:
    # The actual spend of an answer goes through the coalescing buffer; the release of the
    # reservation must too. Straight to the store, it landed first: the key's spend read 0
    # in between, and an over-budget key was admitted into what looked like an empty budget.
    shared = CoalescingStore(store, 3600.0)  # a window that only the shutdown ends
    outcomes = Outcomes(store, lambda: NOW, random.Random(1), NoTelemetry(), counters=shared)
    expires = NOW + 3600
    assert await store.reserve_key_spend("k1", 100, 0.25, budget_usd=0.001)  # an empty budget
    await shared.record_key_usage("k1", None, 10, 0.016, expires)  # the answer's actual spend
    await outcomes.key_usage("k1", None, -100, -0.25, expires)  # the reservation's release
    minute = int(NOW // 60)
    assert (await store.read_key_usage("k1", minute)).spend_usd == 0.25  # neither landed yet
    await shared.aclose()
    assert (await store.read_key_usage("k1", minute)).spend_usd == pytest.approx(0.016)
