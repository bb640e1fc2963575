"""Outcomes' probe lease handling against the embedded DynamoDB (a real conditional write)."""

from __future__ import annotations

import random

from edgeproxy.config.models import CircuitSettings, Deployment, StickySettings
from edgeproxy.routing.snapshot import Circuit, CircuitState
from edgeproxy.service.outcomes import Outcomes, PoolContext
from edgeproxy.service.telemetry import NoTelemetry
from edgeproxy.state.dynamo import DynamoStore
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
    assert await outcomes.take_probe(first, "req-1", DEP)
    second = await _context(store)
    assert not await outcomes.take_probe(second, "req-2", DEP)  # the fleet has one prober

    await outcomes.release_probe(first, "req-1", DEP)
    third = await _context(store)
    assert third.snapshot.circuit("d1").probe_owner is None
    assert await outcomes.take_probe(third, "req-3", DEP)


async def test_release_by_a_non_owner_changes_nothing(store: DynamoStore) -> None:
    expired = Circuit("d1", state=CircuitState.OPEN, open_until=NOW - 1, version=1)
    assert await store.write_circuit(expired, 0) is None
    outcomes = Outcomes(store, lambda: NOW, random.Random(1), NoTelemetry())
    owner = await _context(store)
    assert await outcomes.take_probe(owner, "req-1", DEP)
    other = await _context(store)
    await outcomes.release_probe(other, "req-2", DEP)
    assert (await _context(store)).snapshot.circuit("d1").probe_owner == "req-1"
