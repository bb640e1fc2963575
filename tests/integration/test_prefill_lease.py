"""001's prefill lease on the embedded store: it rides the start count and is read back
fleet-wide like the in-flight counts, so a lease whose process died stops counting.

The lease is the uncached prompt tokens (and 1 if large) an attempt holds from its
start to its first token, in its usage bucket (``prefill_tokens``, ``prefill_elephants``).
"""

from __future__ import annotations

import asyncio

from edgeproxy.service.admission import InFlight
from edgeproxy.state.dynamodb.dynamo import DynamoStore
from edgeproxy.state.store import SnapshotRequest, UsageDelta
from edgeproxy_dev.clock import Clock

NOW = 1_700_000_010.0
MINUTE = int(NOW // 60)
LATER = NOW + 3600
LEASE = (250_000, 1)


async def _lease(store: DynamoStore, minute: int) -> tuple[int, int]:
    """The lease as a routing read at ``minute`` sees it (the last two buckets)."""
    read = SnapshotRequest(pool="chat", deployment_ids=["d1"], domains=[], minute=minute)
    return (await store.read_pool(read)).prefill_of("d1")


async def test_the_lease_rides_the_start_count_and_its_release_gives_it_back(
    store: DynamoStore,
) -> None:
    assert await store.admit("d1", MINUTE, None, LATER, prefill=LEASE)
    assert await store.admit("d1", MINUTE, None, LATER, prefill=(1_000, 0))
    (bucket,) = await store.read_usage("d1", MINUTE, MINUTE)
    # One write: the start count and the lease land in the same item together.
    assert (bucket.requests, bucket.inflight) == (2, 2)
    assert (bucket.prefill_tokens, bucket.prefill_elephants) == (251_000, 1)
    assert await _lease(store, MINUTE) == (251_000, 1)

    await store.record(
        UsageDelta("d1", MINUTE, prefill_tokens=-250_000, prefill_elephants=-1), LATER
    )
    assert await _lease(store, MINUTE) == (1_000, 0)


async def test_an_attempt_without_a_lease_writes_none(store: DynamoStore) -> None:
    assert await store.admit("d1", MINUTE, 10, LATER)
    (bucket,) = await store.read_usage("d1", MINUTE, MINUTE)
    assert (bucket.prefill_tokens, bucket.prefill_elephants) == (0, 0)
    assert await _lease(store, MINUTE) == (0, 0)


async def test_a_lease_whose_process_died_stops_counting_within_two_minutes(
    store: DynamoStore,
) -> None:
    # Taken, then never released nor moved: its instance is gone.
    assert await store.admit("d1", MINUTE, None, LATER, prefill=LEASE)
    assert await _lease(store, MINUTE + 1) == LEASE  # the previous bucket still counts
    assert await _lease(store, MINUTE + 2) == (0, 0)  # past it, no routing read sees it


async def test_a_live_lease_moves_with_its_in_flight_count_and_is_released_where_held(
    store: DynamoStore,
) -> None:
    clock = Clock()
    start = int(clock.now() // 60)
    later = clock.now() + 3600
    assert await store.admit("d1", start, None, later, prefill=LEASE)
    inflight = InFlight(store, "d1", start, clock.now, until=later)
    inflight.prefill = LEASE
    inflight.follow(None)
    try:
        for minute in (start + 1, start + 2, start + 3):
            clock.advance(60)
            await _until_moved(store, minute)
            assert await _lease(store, minute + 1) == LEASE  # counted while it lives
        await inflight.release_prefill(None)
        assert inflight.prefill == (0, 0)
        assert await _lease(store, start + 3) == (0, 0)
        (held,) = await store.read_usage("d1", start + 3, start + 3)
        assert (held.inflight, held.prefill_tokens) == (1, 0)  # the attempt runs on, decoding
    finally:
        assert await inflight.stop() == start + 3
    assert inflight.released() == (0, 0)  # nothing left for the outcome to release


async def _until_moved(store: DynamoStore, minute: int) -> None:
    """Poll (with a deadline) until the lease sits in ``minute`` and left the bucket before."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 60  # a loaded machine's store can time a write out: it is retried
    while True:
        here = await store.read_usage("d1", minute - 1, minute)
        by_minute = {u.minute: u.prefill_tokens for u in here}
        if by_minute.get(minute) == LEASE[0] and by_minute.get(minute - 1, 0) == 0:
            return
        assert loop.time() < deadline, f"the lease never moved into {minute}: {by_minute}"
        await asyncio.sleep(0.05)
