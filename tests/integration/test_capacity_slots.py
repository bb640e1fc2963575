"""Capacity slots on the real (moto) table: never two holders, lapsed slots retaken, reads see them."""

from __future__ import annotations

import asyncio

from edgeproxy.state.dynamodb.dynamo import DynamoStore
from edgeproxy.state.store import SnapshotRequest

NOW = 1_700_000_000.0
UNTIL = NOW + 30


async def test_a_cap_of_two_gives_two_slots_and_no_third(store: DynamoStore) -> None:
    taken = await asyncio.gather(
        *(store.take_slot("d", [0, 1], f"h{i}", UNTIL, NOW) for i in range(6))
    )
    assert sorted(s for s in taken if s is not None) == [0, 1]
    assert taken.count(None) == 4


async def test_a_released_slot_is_free_and_a_stale_release_frees_nothing(
    store: DynamoStore,
) -> None:
    assert await store.take_slot("d", [0], "first", UNTIL, NOW) == 0
    await store.release_slot("d", 0, "first")
    assert await store.take_slot("d", [0], "second", UNTIL, NOW) == 0
    await store.release_slot("d", 0, "first")  # late: the slot is someone else's now
    assert await store.take_slot("d", [0], "third", UNTIL, NOW) is None


async def test_a_crashed_holders_slot_lapses_at_its_until(store: DynamoStore) -> None:
    assert await store.take_slot("d", [0], "crashed", UNTIL, NOW) == 0
    assert await store.take_slot("d", [0], "next", UNTIL + 30, UNTIL - 1) is None
    assert await store.take_slot("d", [0], "next", UNTIL + 30, UNTIL + 1) == 0


async def test_the_pool_read_sees_which_slots_are_held(store: DynamoStore) -> None:
    await store.take_slot("d", [1], "h", UNTIL, NOW)
    request = SnapshotRequest("p", ["d"], [], int(NOW // 60), slots=(("d", 3),))
    snapshot = await store.read_pool(request)
    assert snapshot.free_slots("d", 3, NOW) == [0, 2]
    assert snapshot.free_slots("d", 3, UNTIL + 1) == [0, 1, 2]
