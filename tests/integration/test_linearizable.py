"""The embedded server applies each request atomically, as DynamoDB does.

moto's plain threaded server does not (probes lost up to 9 of 1600 ADDs and
let a limit of 100 admit 101); every race test in the contract suite relies on
this. Without one-at-a-time serving (dynamo_front runs each request inline on
one event loop), the ADD test fails in about two runs of three.
"""

from __future__ import annotations

import asyncio

import pytest

from edgeproxy.state.dynamodb.dynamo import DynamoStore
from edgeproxy.state.store import UsageDelta

MINUTE = 28_333_333
EXPIRES = MINUTE * 60 + 3600
TASKS = 32


async def test_conditional_increments_admit_exactly_the_limit(store: DynamoStore) -> None:
    async def worker() -> list[bool]:
        return [await store.admit("d1", MINUTE, 100, EXPIRES) for _ in range(5)]

    results = [
        r for batch in await asyncio.gather(*(worker() for _ in range(TASKS))) for r in batch
    ]

    assert results.count(True) == 100
    (bucket,) = await store.read_usage("d1", MINUTE, MINUTE)
    assert (bucket.requests, bucket.inflight) == (100, 100)  # and no admitted update was lost


@pytest.mark.slow  # ~10 s: moto and botocore spend ~6 ms of CPU per request
async def test_unconditional_adds_lose_no_update(store: DynamoStore) -> None:
    async def worker() -> None:
        for _ in range(50):
            await store.record(UsageDelta("d1", MINUTE, inflight=1), EXPIRES)

    await asyncio.gather(*(worker() for _ in range(TASKS)))

    (bucket,) = await store.read_usage("d1", MINUTE, MINUTE)
    assert bucket.inflight == TASKS * 50
