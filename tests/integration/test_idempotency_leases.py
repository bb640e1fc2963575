"""Idempotency leases on the real (moto) table: one taker among many, owners named, expiry read."""

from __future__ import annotations

import asyncio

from edgeproxy.routing.idempotency import KEY_TTL_S, Lease, LeaseState, lease_until
from edgeproxy.state.dynamodb.dynamo import DynamoStore

NOW = 1_800_000_000.0
DEADLINE_S = 30.0


def lease(owner: str, at: float = NOW, request_hash: str = "h") -> Lease:
    return Lease(
        request_hash, owner, LeaseState.RUNNING, lease_until(at, DEADLINE_S), at + KEY_TTL_S
    )


async def test_of_twenty_concurrent_takers_exactly_one_wins(store: DynamoStore) -> None:
    results = await asyncio.gather(
        *(store.take_lease("key1", "order-7", lease(f"o{i}"), NOW) for i in range(20))
    )
    winners = [r for won, r in results if won and r is not None]
    assert len(winners) == 1
    # Every loser got the winner's lease back with its failed condition (no second read).
    assert {r.owner for won, r in results if not won and r is not None} == {winners[0].owner}
    assert await store.read_lease("key1", "order-7") == winners[0]


async def test_keys_are_scoped_by_client_key(store: DynamoStore) -> None:
    assert (await store.take_lease("key1", "k", lease("a"), NOW))[0]
    assert (await store.take_lease("key2", "k", lease("b"), NOW))[0]
    assert await store.read_lease("key3", "k") is None


async def test_a_finished_lease_holds_its_answer_and_is_not_taken_over(
    store: DynamoStore,
) -> None:
    await store.take_lease("s", "k", lease("first"), NOW)
    assert await store.finish_lease("s", "k", "first", b"idem-answer")
    stored = await store.read_lease("s", "k")
    assert stored is not None
    assert stored.state is LeaseState.DONE
    assert stored.answer == b"idem-answer"
    later = NOW + DEADLINE_S + 60  # the lease would have lapsed, but it is finished
    won, blocking = await store.take_lease("s", "k", lease("second", later), later)
    assert not won
    assert blocking == stored
    # A day later the record has expired: the key is new again (TTL deletion is lazy).
    expired = NOW + KEY_TTL_S
    assert (await store.take_lease("s", "k", lease("third", expired), expired))[0]


async def test_a_dead_owners_lease_is_taken_over_and_it_can_no_longer_finish_or_release(
    store: DynamoStore,
) -> None:
    await store.take_lease("s", "k", lease("dead"), NOW)
    lapsed = lease("dead").lease_until
    assert not (await store.take_lease("s", "k", lease("next", lapsed - 1), lapsed - 1))[0]
    assert (await store.take_lease("s", "k", lease("next", lapsed), lapsed))[0]
    assert not await store.finish_lease("s", "k", "dead", b"idem-late")
    await store.release_lease("s", "k", "dead")  # late: leaves the successor's lease alone
    stored = await store.read_lease("s", "k")
    assert stored is not None
    assert stored.owner == "next"
    assert stored.state is LeaseState.RUNNING


async def test_a_released_lease_is_gone_and_the_next_call_takes_it(store: DynamoStore) -> None:
    await store.take_lease("s", "k", lease("first"), NOW)
    await store.release_lease("s", "k", "first")
    assert await store.read_lease("s", "k") is None
    assert (await store.take_lease("s", "k", lease("retry", NOW + 1), NOW + 1))[0]
