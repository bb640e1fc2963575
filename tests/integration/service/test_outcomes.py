"""Outcomes' probe lease handling against the embedded DynamoDB (a real conditional write)."""

from __future__ import annotations

import random

from edgeproxy.config.deployment import Deployment
from edgeproxy.config.router import CircuitSettings, StickySettings
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


class Recorded:
    """A Telemetry that remembers what was counted."""

    def __init__(self) -> None:
        self.names: list[str] = []

    def count(self, name: str, value: float = 1, **dimensions: str) -> None:
        self.names.append(".".join([name, *(dimensions[k] for k in sorted(dimensions))]))


async def test_failures_and_transitions_are_counted(store: DynamoStore) -> None:
    from edgeproxy.routing.faults import FailureClass, Fault, FaultKind
    from edgeproxy.service.outcomes import Attempt

    telemetry = Recorded()
    outcomes = Outcomes(store, lambda: NOW, random.Random(1), telemetry)
    settings = CircuitSettings(allowed_fails=1)
    fault = Fault(FaultKind.HTTP, "bad gateway", status=502)
    for n in range(2):
        ctx = await _context(store)
        ctx.circuit = settings
        attempt = Attempt(DEP, int(NOW // 60), NOW - 1, False, False, f"req-{n}")
        await outcomes.failure(ctx, attempt, fault, FailureClass.TRANSIENT, count_for_circuit=True)
    assert telemetry.names.count("Attempts.failure") == 2
    assert telemetry.names.count("AttemptFailures.transient") == 2
    assert telemetry.names.count("CircuitTransitions.open") == 1  # the second failure opened it
    assert (await _context(store)).snapshot.circuit("d1").state is CircuitState.OPEN
