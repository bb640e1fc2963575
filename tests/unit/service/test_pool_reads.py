"""Single-flight pool reads (``service.pool_reads``), on a store whose reads the test ends.

Time is a step counter: every arrival and every read start takes the next
step, so "started after it arrived" is an exact comparison, not a race.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Sequence
from dataclasses import dataclass, field

import pytest

from edgeproxy.errors import StoreUnavailable
from edgeproxy.routing.snapshot import BindingKey, PoolSnapshot
from edgeproxy.service.sharing.pool_reads import PoolReads
from edgeproxy.state.store import SnapshotRequest


@dataclass
class Read:
    started: int
    requests: list[SnapshotRequest]
    snapshots: list[PoolSnapshot] = field(default_factory=list)
    done: asyncio.Event = field(default_factory=asyncio.Event)


class HeldStore:
    """Answers ``read_pools`` only when the test releases the read (``finish``)."""

    def __init__(self, steps: itertools.count[int]) -> None:
        self.steps = steps
        self.reads: list[Read] = []
        self.fail: Exception | None = None
        self.started = asyncio.Condition()

    async def read_pools(self, requests: Sequence[SnapshotRequest]) -> list[PoolSnapshot]:
        read = Read(next(self.steps), list(requests))
        read.snapshots = [PoolSnapshot(pool_generation=read.started) for _ in requests]
        self.reads.append(read)
        async with self.started:
            self.started.notify_all()
        await read.done.wait()
        if self.fail is not None:
            raise self.fail
        return read.snapshots

    async def finish(self, index: int) -> None:
        async with self.started:
            await self.started.wait_for(lambda: len(self.reads) > index)
        self.reads[index].done.set()
        for _ in range(5):
            await asyncio.sleep(0)


def request(pool: str = "p", caller: str | None = None) -> SnapshotRequest:
    binding = BindingKey(caller, pool, "openai.chat") if caller else None
    return SnapshotRequest(pool, ["a", "b"], ["x"], 100, binding=binding)


async def settle() -> None:
    for _ in range(5):
        await asyncio.sleep(0)


async def test_a_lone_request_reads_at_once() -> None:
    store = HeldStore(itertools.count())
    reads = PoolReads(store.read_pools)
    task = asyncio.ensure_future(reads.read(request()))
    await store.finish(0)
    assert (await task).pool_generation == 0
    assert len(store.reads) == 1


async def test_requests_never_route_on_a_read_that_started_before_they_arrived() -> None:
    steps = itertools.count()
    store = HeldStore(steps)
    reads = PoolReads(store.read_pools)
    arrivals: list[asyncio.Future[tuple[int, PoolSnapshot]]] = []

    async def one(caller: str) -> tuple[int, PoolSnapshot]:
        arrived = next(steps)  # the moment it asks, with no await in between
        return arrived, await reads.read(request(caller=caller))

    def arrive(n: int) -> None:
        arrivals.extend(asyncio.ensure_future(one(f"c{i % 3}")) for i in range(n))

    arrive(5)  # no read running: these share the first read
    await settle()
    arrive(20)  # the first read is in flight: these wait for the next
    await settle()
    assert len(store.reads) == 1
    await store.finish(0)  # the next read starts as the first one ends
    assert len(store.reads) == 2
    arrive(7)
    await settle()
    await store.finish(1)
    await store.finish(2)
    for arrived, snapshot in [await f for f in arrivals]:
        assert snapshot.pool_generation > arrived  # its read started after it arrived
    assert len(store.reads) == 3  # 32 requests, 3 reads
    # Each read asked for each distinct request once (three binding keys).
    assert [len(r.requests) for r in store.reads] == [3, 3, 3]


async def test_a_full_batch_starts_without_waiting() -> None:
    store = HeldStore(itertools.count())
    reads = PoolReads(store.read_pools, max_batch=4)
    first = asyncio.ensure_future(reads.read(request(caller="c0")))
    await settle()
    waiting = [asyncio.ensure_future(reads.read(request(caller=f"c{i}"))) for i in range(6)]
    await settle()
    assert [len(r.requests) for r in store.reads] == [1, 4]  # the full batch runs alongside
    for index in range(3):
        await store.finish(index)
    await first
    await asyncio.gather(*waiting)
    assert [len(r.requests) for r in store.reads] == [1, 4, 2]


async def test_each_request_gets_the_snapshot_of_its_own_request() -> None:
    store = HeldStore(itertools.count())
    reads = PoolReads(store.read_pools)
    mine, theirs, same = request(caller="c1"), request(caller="c2"), request(caller="c1")
    tasks = [asyncio.ensure_future(reads.read(r)) for r in (mine, theirs, same)]
    await store.finish(0)
    got = [await t for t in tasks]
    assert store.reads[0].requests == [mine, theirs]
    assert got[0] is store.reads[0].snapshots[0]
    assert got[1] is store.reads[0].snapshots[1]
    assert got[2] is got[0]


async def test_pools_do_not_wait_for_each_other() -> None:
    store = HeldStore(itertools.count())
    reads = PoolReads(store.read_pools)
    both = [asyncio.ensure_future(reads.read(request(pool))) for pool in ("p", "q")]
    await settle()
    assert len(store.reads) == 2
    await store.finish(0)
    await store.finish(1)
    await asyncio.gather(*both)


async def test_a_failed_read_fails_its_members_and_the_next_read_still_runs() -> None:
    store = HeldStore(itertools.count())
    reads = PoolReads(store.read_pools)
    first = asyncio.ensure_future(reads.read(request()))
    await settle()
    second = asyncio.ensure_future(reads.read(request()))
    await settle()
    store.fail = RuntimeError("store down")
    await store.finish(0)
    with pytest.raises(RuntimeError):
        await first
    store.fail = None
    await store.finish(1)
    assert (await second).pool_generation == 1


async def test_a_caller_that_leaves_does_not_cancel_the_shared_read() -> None:
    store = HeldStore(itertools.count())
    reads = PoolReads(store.read_pools)
    leaving = asyncio.ensure_future(reads.read(request()))
    staying = asyncio.ensure_future(reads.read(request()))
    await settle()
    leaving.cancel()
    await settle()
    await store.finish(0)
    assert (await staying).pool_generation == 0


async def test_requests_waiting_on_a_read_the_store_let_down_fail_with_it() -> None:
    # The store is down: the running read spent its budget. Requests that arrived during it
    # get its StoreUnavailable at once, not after a second budget of their own read.
    store = HeldStore(itertools.count())
    reads = PoolReads(store.read_pools)
    first = asyncio.ensure_future(reads.read(request()))
    await settle()
    waiting = asyncio.ensure_future(reads.read(request(caller="c")))
    await settle()
    store.fail = StoreUnavailable("DynamoDB did not answer within the budget")
    await store.finish(0)
    await settle()
    assert len(store.reads) == 1  # no second read started for the waiting request
    for caller in (first, waiting):
        with pytest.raises(StoreUnavailable):
            await asyncio.wait_for(caller, 5)
    store.fail = None
    later = asyncio.ensure_future(reads.read(request()))  # after the failure: its own read
    await store.finish(1)
    assert (await later).pool_generation == 1  # the second read of all
