"""The ``Store`` contract: every implementation must pass this suite, races included.

Add an implementation by adding the name of its fixture to ``IMPLEMENTATIONS``.
"""

from __future__ import annotations

import asyncio
import dataclasses
from typing import Any

import pytest

from edgeproxy.routing.snapshot import (
    Binding,
    BindingKey,
    Circuit,
    CircuitState,
    Health,
    OpenCause,
    Usage,
)
from edgeproxy.state.store import SnapshotRequest, Store, UsageDelta

IMPLEMENTATIONS = ["store"]  # fixture names: the DynamoStore on the embedded server

NOW = 1_700_000_000.0
MINUTE = int(NOW // 60)
LATER = NOW + 3600
KEY = BindingKey(caller="caller-hash", pool="gpt-4o", protocol="chat")


@pytest.fixture(params=IMPLEMENTATIONS)
def any_store(request: pytest.FixtureRequest) -> Store:
    store: Store = request.getfixturevalue(request.param)
    return store


def _request(**overrides: object) -> SnapshotRequest:
    base = SnapshotRequest(
        pool="gpt-4o", deployment_ids=["d1", "d2"], domains=["acct-a"], minute=MINUTE, binding=KEY
    )
    return dataclasses.replace(base, **overrides)  # type: ignore[arg-type]


async def _throttled_until(store: Store, domain: str) -> float:
    snapshot = await store.read_pool(_request(domains=[domain]))
    return snapshot.capacity(domain).throttled_until


def _opened(version: int, owner: str = "a") -> Circuit:
    return Circuit(
        "d1",
        state=CircuitState.OPEN,
        failures=3,
        window_start=NOW,
        open_until=NOW + 30,
        cause=OpenCause.TRANSIENT,
        probe_owner=owner,
        version=version,
        opened_at=NOW,
    )


# -- read_pool ---------------------------------------------------------------------


async def test_read_pool_of_empty_table_is_all_defaults(any_store: Store) -> None:
    snapshot = await any_store.read_pool(_request())

    assert snapshot.circuits == {}
    assert snapshot.capacities == {}
    assert snapshot.health == {}
    assert all(buckets == [] for buckets in snapshot.usage.values())
    assert snapshot.binding is None
    assert snapshot.pool_generation == 0


async def test_read_pool_returns_what_was_written(any_store: Store) -> None:
    circuit = _opened(version=1)
    assert await any_store.write_circuit(circuit, expected_version=0) is None
    await any_store.extend_capacity("acct-a", NOW + 20)
    await any_store.put_health(
        Health("d2", score=0.8, ewma_latency_ms=250.0, updated_at=NOW), LATER
    )
    for minute in (MINUTE - 2, MINUTE - 1, MINUTE):
        assert await any_store.admit("d1", minute, None, LATER)
    binding = await any_store.put_binding(Binding(KEY, "d2", expires_at=LATER, generation=1), None)
    await any_store.bump_pool_generation("gpt-4o")

    snapshot = await any_store.read_pool(_request())

    assert snapshot.circuits == {"d1": circuit}
    assert snapshot.capacity("acct-a").throttled_until == NOW + 20
    assert snapshot.health_of("d2") == Health(
        "d2", score=0.8, ewma_latency_ms=250.0, updated_at=NOW
    )
    assert sorted(u.minute for u in snapshot.usage["d1"]) == [MINUTE - 1, MINUTE]  # last two only
    assert snapshot.usage_of("d1", MINUTE).requests == 1
    assert snapshot.inflight_of("d1") == 2
    assert snapshot.binding == binding
    assert snapshot.pool_generation == 1


async def test_read_pool_returns_expired_items_as_stored(any_store: Store) -> None:
    stale = Binding(KEY, "d1", expires_at=NOW - 3600)
    await any_store.put_binding(stale, None)

    snapshot = await any_store.read_pool(_request())

    assert snapshot.binding == dataclasses.replace(stale, version=1)


async def test_read_pool_tolerates_repeated_domains(any_store: Store) -> None:
    await any_store.extend_capacity("acct-a", NOW + 5)
    snapshot = await any_store.read_pool(_request(domains=["acct-a", "acct-a"]))
    assert snapshot.capacity("acct-a").throttled_until == NOW + 5


# -- counters ----------------------------------------------------------------------


async def test_admit_without_limit_counts_requests_and_inflight(any_store: Store) -> None:
    for _ in range(3):
        assert await any_store.admit("d1", MINUTE, None, LATER)

    (bucket,) = await any_store.read_usage("d1", MINUTE, MINUTE)
    assert (bucket.requests, bucket.inflight) == (3, 3)


async def test_admit_stops_exactly_at_the_limit(any_store: Store) -> None:
    results = [await any_store.admit("d1", MINUTE, 3, LATER) for _ in range(5)]

    assert results == [True, True, True, False, False]
    (bucket,) = await any_store.read_usage("d1", MINUTE, MINUTE)
    assert (bucket.requests, bucket.inflight) == (3, 3)  # a refused admit changes nothing


async def test_concurrent_admits_never_pass_the_limit(any_store: Store) -> None:
    results = await asyncio.gather(*(any_store.admit("d1", MINUTE, 5, LATER) for _ in range(20)))

    assert results.count(True) == 5
    (bucket,) = await any_store.read_usage("d1", MINUTE, MINUTE)
    assert bucket.requests == 5


async def test_zero_limit_admits_nothing(any_store: Store) -> None:
    assert not await any_store.admit("d1", MINUTE, 0, LATER)
    assert await any_store.read_usage("d1", MINUTE, MINUTE) == []


async def test_limit_applies_per_bucket(any_store: Store) -> None:
    assert await any_store.admit("d1", MINUTE, 1, LATER)
    assert not await any_store.admit("d1", MINUTE, 1, LATER)
    assert await any_store.admit("d1", MINUTE + 1, 1, LATER)
    assert await any_store.admit("d2", MINUTE, 1, LATER)


async def test_token_reservations_fill_a_tpm_limit_exactly(any_store: Store) -> None:
    fits = [
        await any_store.admit("d1", MINUTE, None, LATER, tpm_limit=1000, reserve=300)
        for _ in range(4)
    ]

    assert fits == [True, True, True, False]  # 900 reserved; 300 more would pass 1000
    assert await any_store.admit("d1", MINUTE, None, LATER, tpm_limit=1000, reserve=100)
    assert not await any_store.admit("d1", MINUTE, None, LATER, tpm_limit=1000, reserve=1)
    (bucket,) = await any_store.read_usage("d1", MINUTE, MINUTE)
    assert (bucket.reserved_tokens, bucket.requests, bucket.inflight) == (1000, 4, 4)


async def test_concurrent_reservations_never_pass_the_tpm_limit(any_store: Store) -> None:
    results = await asyncio.gather(
        *(any_store.admit("d1", MINUTE, None, LATER, tpm_limit=1000, reserve=70) for _ in range(40))
    )

    assert results.count(True) == 14  # 14 * 70 = 980; a 15th would make 1050
    (bucket,) = await any_store.read_usage("d1", MINUTE, MINUTE)
    assert bucket.reserved_tokens == 980


async def test_rpm_and_tpm_limits_hold_together(any_store: Store) -> None:
    def admit(reserve: int) -> Any:
        return any_store.admit("d1", MINUTE, 2, LATER, tpm_limit=100, reserve=reserve)

    assert [await admit(10), await admit(95), await admit(10), await admit(10)] == [
        True,
        False,  # no token room
        True,
        False,  # no request room
    ]
    (bucket,) = await any_store.read_usage("d1", MINUTE, MINUTE)
    assert (bucket.requests, bucket.reserved_tokens) == (2, 20)


async def test_a_reconciled_reservation_makes_room_again(any_store: Store) -> None:
    assert await any_store.admit("d1", MINUTE, None, LATER, tpm_limit=100, reserve=100)
    assert not await any_store.admit("d1", MINUTE, None, LATER, tpm_limit=100, reserve=10)
    await any_store.record(UsageDelta("d1", MINUTE, reserved_tokens=-60, inflight=-1), LATER)

    assert await any_store.admit("d1", MINUTE, None, LATER, tpm_limit=100, reserve=60)


async def test_record_adds_every_counter(any_store: Store) -> None:
    assert await any_store.admit("d1", MINUTE, None, LATER)
    delta = UsageDelta(
        "d1",
        MINUTE,
        inflight=-1,
        prompt_tokens=100,
        completion_tokens=20,
        successes=1,
        latency_ms_sum=350,
        output_tokens_per_s_sum=41.5,
        sticky_hits=1,
    )
    await any_store.record(delta, LATER)
    await any_store.record(dataclasses.replace(delta, inflight=0, failures=1, successes=0), LATER)

    assert await any_store.read_usage("d1", MINUTE, MINUTE) == [
        Usage(
            "d1",
            MINUTE,
            requests=1,
            inflight=0,
            prompt_tokens=200,
            completion_tokens=40,
            successes=1,
            failures=1,
            latency_ms_sum=700,
            output_tokens_per_s_sum=83.0,
            sticky_hits=2,
        )
    ]


async def test_read_usage_returns_the_range_oldest_first(any_store: Store) -> None:
    for minute in range(MINUTE - 3, MINUTE + 2):
        await any_store.record(UsageDelta("d1", minute, successes=minute - MINUTE + 10), LATER)
    await any_store.record(UsageDelta("d2", MINUTE, successes=1), LATER)

    buckets = await any_store.read_usage("d1", MINUTE - 2, MINUTE)

    assert [(u.minute, u.successes) for u in buckets] == [
        (MINUTE - 2, 8),
        (MINUTE - 1, 9),
        (MINUTE, 10),
    ]


# -- circuits ----------------------------------------------------------------------


async def test_write_circuit_commits_in_version_order(any_store: Store) -> None:
    assert await any_store.write_circuit(_opened(1), expected_version=0) is None
    closed = Circuit("d1", version=2, opened_at=NOW)
    assert await any_store.write_circuit(closed, expected_version=1) is None

    snapshot = await any_store.read_pool(_request())
    assert snapshot.circuit("d1") == closed


async def test_stale_write_circuit_returns_the_stored_circuit(any_store: Store) -> None:
    assert await any_store.write_circuit(_opened(1, owner="first"), expected_version=0) is None

    assert await any_store.write_circuit(_opened(1, owner="late"), 0) == _opened(1, owner="first")
    assert await any_store.write_circuit(_opened(5, owner="late"), 4) == _opened(1, owner="first")


async def test_write_circuit_expecting_an_item_that_is_absent_loses(any_store: Store) -> None:
    assert await any_store.write_circuit(_opened(3), expected_version=2) == Circuit("d1")


async def test_concurrent_circuit_writes_have_one_winner(any_store: Store) -> None:
    assert await any_store.write_circuit(_opened(1), expected_version=0) is None
    contenders = [_opened(2, owner=f"instance-{i}") for i in range(8)]

    results = await asyncio.gather(*(any_store.write_circuit(c, 1) for c in contenders))

    winners = [c for c, result in zip(contenders, results, strict=True) if result is None]
    assert len(winners) == 1
    assert all(result in (None, winners[0]) for result in results)  # losers see the winner
    assert (await any_store.read_pool(_request())).circuit("d1") == winners[0]


async def test_write_circuit_refuses_a_skipped_version(any_store: Store) -> None:
    with pytest.raises(ValueError, match="version"):
        await any_store.write_circuit(_opened(3), expected_version=1)


# -- capacity ----------------------------------------------------------------------


async def test_capacity_is_extended_never_shortened(any_store: Store) -> None:
    assert await _throttled_until(any_store, "acct-a") == 0.0

    await any_store.extend_capacity("acct-a", NOW + 60)
    await any_store.extend_capacity("acct-a", NOW + 10)
    assert await _throttled_until(any_store, "acct-a") == NOW + 60

    await any_store.extend_capacity("acct-a", NOW + 90)
    assert await _throttled_until(any_store, "acct-a") == NOW + 90


async def test_concurrent_throttles_keep_the_longest(any_store: Store) -> None:
    untils = [NOW + s for s in (5, 90, 30, 60, 1)]
    await asyncio.gather(*(any_store.extend_capacity("acct-a", u) for u in untils))
    assert await _throttled_until(any_store, "acct-a") == NOW + 90


# -- bindings ----------------------------------------------------------------------


async def test_put_binding_creates_and_renews(any_store: Store) -> None:
    created = await any_store.put_binding(Binding(KEY, "d1", expires_at=NOW + 60), None)
    assert created == Binding(KEY, "d1", expires_at=NOW + 60, version=1)

    renewed = await any_store.put_binding(Binding(KEY, "d1", expires_at=NOW + 120), created)
    assert renewed == Binding(KEY, "d1", expires_at=NOW + 120, version=2)
    assert (await any_store.read_pool(_request())).binding == renewed


async def test_stale_renewal_returns_the_winner(any_store: Store) -> None:
    created = await any_store.put_binding(Binding(KEY, "d1", expires_at=NOW + 60), None)
    moved = await any_store.put_binding(Binding(KEY, "d2", expires_at=NOW + 60), created)

    result = await any_store.put_binding(Binding(KEY, "d1", expires_at=NOW + 120), created)

    assert result == moved
    assert (await any_store.read_pool(_request())).binding == moved


async def test_create_over_an_existing_binding_returns_it(any_store: Store) -> None:
    first = await any_store.put_binding(Binding(KEY, "d1", expires_at=NOW + 60), None)
    assert await any_store.put_binding(Binding(KEY, "d2", expires_at=NOW + 60), None) == first


async def test_an_expired_binding_is_replaced_by_naming_it(any_store: Store) -> None:
    stale = await any_store.put_binding(Binding(KEY, "d1", expires_at=NOW - 10), None)
    fresh = await any_store.put_binding(Binding(KEY, "d2", expires_at=NOW + 60), stale)
    assert fresh.deployment_id == "d2"
    assert (await any_store.read_pool(_request())).binding == fresh


async def test_concurrent_creates_agree_on_one_binding(any_store: Store) -> None:
    attempts = [Binding(KEY, f"d{i}", expires_at=NOW + 60) for i in range(8)]

    results = await asyncio.gather(*(any_store.put_binding(b, None) for b in attempts))

    assert len(set(results)) == 1
    assert (await any_store.read_pool(_request())).binding == results[0]


async def test_renewing_a_deleted_binding_creates_it_again(any_store: Store) -> None:
    created = await any_store.put_binding(Binding(KEY, "d1", expires_at=NOW + 60), None)
    await any_store.delete_binding(KEY)

    renewed = await any_store.put_binding(Binding(KEY, "d1", expires_at=NOW + 120), created)

    assert (await any_store.read_pool(_request())).binding == renewed
    assert renewed.expires_at == NOW + 120


async def test_delete_binding_only_if_it_still_names_the_deployment(any_store: Store) -> None:
    await any_store.put_binding(Binding(KEY, "d2", expires_at=NOW + 60), None)

    await any_store.delete_binding(KEY, deployment_id="d1")  # re-pointed meanwhile: kept, no error
    assert (await any_store.read_pool(_request())).binding is not None

    await any_store.delete_binding(KEY, deployment_id="d2")
    assert (await any_store.read_pool(_request())).binding is None

    await any_store.delete_binding(KEY)  # absent: nothing to do, no error


async def test_pool_generation_bumps_are_counted(any_store: Store) -> None:
    results = await asyncio.gather(*(any_store.bump_pool_generation("gpt-4o") for _ in range(10)))

    assert sorted(results) == list(range(1, 11))
    assert (await any_store.read_pool(_request())).pool_generation == 10
    assert await any_store.bump_pool_generation("other") == 1


# -- health and configuration --------------------------------------------------------


async def test_put_health_replaces_the_previous_result(any_store: Store) -> None:
    first = Health(
        "d1", score=0.2, ewma_tokens_per_s=10.0, updated_at=NOW, samples=3, minute=MINUTE
    )
    assert await any_store.put_health(first, LATER)
    later = Health("d1", score=0.9, updated_at=NOW + 60, samples=4, minute=MINUTE + 1)
    assert await any_store.put_health(later, LATER)

    snapshot = await any_store.read_pool(_request())
    assert snapshot.health_of("d1") == later
    assert snapshot.health_of("d2") == Health("d2")  # never written: neutral


async def test_a_run_for_the_same_or_an_earlier_minute_changes_nothing(any_store: Store) -> None:
    stored = Health("d1", score=0.9, updated_at=NOW, samples=4, minute=MINUTE)
    assert await any_store.put_health(stored, LATER)
    again = Health("d1", score=0.1, updated_at=NOW + 1, samples=1, minute=MINUTE)
    older = Health("d1", score=0.1, updated_at=NOW + 2, samples=1, minute=MINUTE - 1)
    results = await asyncio.gather(*(any_store.put_health(h, LATER) for h in (again, older)))
    assert results == [False, False]
    assert (await any_store.read_pool(_request())).health_of("d1") == stored


async def test_config_saves_are_conditional_on_the_version(any_store: Store) -> None:
    assert await any_store.load_config() is None

    assert await any_store.save_config("deployments: []\n", 0) == 1
    assert await any_store.save_config("deployments: [a]\n", 1) == 2
    assert await any_store.save_config("stale\n", 1) is None  # version 1 is gone
    assert await any_store.save_config("again\n", 0) is None  # a document exists

    stored = await any_store.load_config()
    assert stored is not None
    assert (stored.document, stored.version) == ("deployments: [a]\n", 2)


async def test_concurrent_config_saves_of_one_version_commit_exactly_once(
    any_store: Store,
) -> None:
    assert await any_store.save_config("v1\n", 0) == 1

    results = await asyncio.gather(*(any_store.save_config(f"w{i}\n", 1) for i in range(8)))

    assert sorted(results, key=str) == [2, *[None] * 7]
    stored = await any_store.load_config()
    assert stored is not None
    assert stored.version == 2
