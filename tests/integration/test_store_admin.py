"""The admin half of the store contract: audited writes, audit pages, rejection counter."""

from __future__ import annotations

import asyncio

from edgeproxy.routing import circuit
from edgeproxy.routing.snapshot import Circuit, CircuitState, Health, OpenCause
from edgeproxy.state.audit import AuditEntry
from edgeproxy.state.dynamodb.dynamo import DynamoStore
from edgeproxy.state.store import SnapshotRequest

NOW = 1_700_000_000.0


def _entry(i: int, at: float = NOW) -> AuditEntry:
    return AuditEntry(
        id=f"e{i:03d}", at=at + i, actor="ops", action="test", target="t", changes=[{"i": i}]
    )


async def _health(store: DynamoStore, dep: str) -> Health:
    snapshot = await store.read_pool(
        SnapshotRequest(pool="p", deployment_ids=[dep], domains=[], minute=0)
    )
    return snapshot.health_of(dep)


async def test_a_config_save_stores_its_audit_entry_with_the_new_version(
    store: DynamoStore,
) -> None:
    assert await store.save_config("a", 0, _entry(1)) == 1

    entries, cursor = await store.read_audit(10)

    assert [(e.id, e.version, e.changes) for e in entries] == [("e001", 1, [{"i": 1}])]
    assert cursor is None


async def test_a_lost_config_save_stores_no_audit_entry(store: DynamoStore) -> None:
    assert await store.save_config("a", 0) == 1

    assert await store.save_config("b", 0, _entry(1)) is None

    assert (await store.read_audit(10))[0] == []


async def test_audit_pages_run_newest_first(store: DynamoStore) -> None:
    await asyncio.gather(*(store.record_audit(_entry(i)) for i in range(5)))

    first, cursor = await store.read_audit(2)
    second, cursor2 = await store.read_audit(2, cursor)
    third, cursor3 = await store.read_audit(2, cursor2)

    assert [e.id for e in first + second + third] == ["e004", "e003", "e002", "e001", "e000"]
    assert cursor3 is None


async def test_an_audited_circuit_write_is_conditional_on_the_version(
    store: DynamoStore,
) -> None:
    opened = circuit.force_open(Circuit("d1"), NOW, NOW + 600, "disk swap")
    assert await store.write_circuit_audited(opened, 0, _entry(1))

    closed = circuit.force_close(opened, NOW + 1)
    assert not await store.write_circuit_audited(
        circuit.force_close(Circuit("d1"), NOW), 0, _entry(2)
    )
    assert await store.write_circuit_audited(closed, opened.version, _entry(3))

    stored = await store.read_circuit("d1")
    assert stored.state is CircuitState.CLOSED
    assert stored.version == 2
    assert [e.id for e in (await store.read_audit(10))[0]] == ["e003", "e001"]


async def test_a_maintenance_circuit_keeps_its_cause_and_reason(store: DynamoStore) -> None:
    opened = circuit.force_open(Circuit("d1"), NOW, NOW + 600, "disk swap")
    await store.write_circuit_audited(opened, 0, _entry(1))

    stored = await store.read_circuit("d1")

    assert (stored.cause, stored.reason, stored.open_until) == (
        OpenCause.MAINTENANCE,
        "disk swap",
        NOW + 600,
    )


async def test_credential_rejections_count_up_survive_the_health_job_and_reset(
    store: DynamoStore,
) -> None:
    await store.count_rejection("d1")
    await store.count_rejection("d1")
    await store.put_health(Health("d1", score=0.3, updated_at=NOW), NOW + 3600)

    health = await _health(store, "d1")
    assert (health.score, health.credential_rejections) == (0.3, 2)

    await store.clear_rejections("d1")
    assert (await _health(store, "d1")).credential_rejections == 0
