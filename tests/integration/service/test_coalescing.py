"""Fewer store calls in a long-lived process, on the embedded DynamoDB (moto on loopback).

- concurrent requests of one pool share reads, and none routes on a read that
  started before it asked (a store that logs each read's start and results);
- coalesced counters add up to the exact sums, through a running gateway;
- a shutdown writes what is pending: nothing is lost.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Callable, Sequence
from typing import Any

import httpx

from edgeproxy.routing.snapshot import BindingKey, PoolSnapshot
from edgeproxy.service.sharing.coalescing import CoalescingStore
from edgeproxy.state.dynamodb.dynamo import DynamoStore
from edgeproxy.state.store import SnapshotRequest, UsageDelta
from edgeproxy_dev.mock_upstream import MockUpstream
from tests.fixtures.configs import config, deployment
from tests.fixtures.table import TableView, wait_for

MINUTE = 20_000_000
HELLO = {"model": "fast-chat", "messages": [{"role": "user", "content": "Hello!"}]}


class LoggedReads(DynamoStore):
    """The real store, logging when each read started and the snapshots it returned."""

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self.log: list[tuple[float, list[PoolSnapshot]]] = []
        self.starts = 0
        self.started = asyncio.Condition()

    async def read_pools(self, requests: Sequence[SnapshotRequest]) -> list[PoolSnapshot]:
        started = time.monotonic()
        async with self.started:
            self.starts += 1
            self.started.notify_all()
        snapshots = await super().read_pools(requests)
        self.log.append((started, snapshots))
        return snapshots


def _request(caller: int) -> SnapshotRequest:
    binding = BindingKey(f"caller-{caller % 4}", "fast-chat", "openai.chat")
    return SnapshotRequest("fast-chat", ["a", "b"], ["127.0.0.1"], MINUTE, binding=binding)


async def test_concurrent_requests_share_reads_that_started_after_they_asked(
    store: DynamoStore, dynamo_client: Any, table_name: str, table_schema: Any
) -> None:
    logged = LoggedReads(dynamo_client, table_name, table_schema, random.Random(0))
    await store.record(UsageDelta("a", MINUTE, requests=7), MINUTE * 60.0 + 3600)
    shared = CoalescingStore(logged, 0.025)

    async def one(caller: int) -> tuple[float, PoolSnapshot]:
        # Eight groups of eight: group g arrives once g reads have started, so each
        # group lands while a read is in flight and must wait for the next one.
        group = caller // 8
        async with logged.started:
            await logged.started.wait_for(lambda: logged.starts >= group)
        asked = time.monotonic()
        return asked, await shared.read_pool(_request(caller))

    answers = await asyncio.gather(*(one(i) for i in range(64)))
    started = {id(s): start for start, snapshots in logged.log for s in snapshots}
    for asked, snapshot in answers:
        assert started[id(snapshot)] >= asked  # read after it asked, never before
        assert snapshot.usage["a"][0].requests == 7
    assert len(logged.log) <= 64 / 4, f"{len(logged.log)} reads for 64 requests"
    assert len(logged.log) == shared.reads.reads


async def test_nothing_is_lost_at_shutdown(store: DynamoStore) -> None:
    shared = CoalescingStore(store, 3600.0)  # a window that only a shutdown ends
    expires = MINUTE * 60.0 + 3600

    async def attempt() -> None:
        assert await shared.admit("a", MINUTE, None, expires)
        await shared.record(UsageDelta("a", MINUTE, inflight=-1, successes=1), expires)

    await asyncio.gather(*(attempt() for _ in range(50)))
    assert await store.read_usage("a", MINUTE, MINUTE) == []  # all still in the buffer
    await shared.aclose()
    (bucket,) = await store.read_usage("a", MINUTE, MINUTE)
    assert (bucket.requests, bucket.successes, bucket.inflight) == (50, 50, 0)


async def test_limited_admission_stays_a_conditional_write(store: DynamoStore) -> None:
    shared = CoalescingStore(store, 3600.0)
    expires = MINUTE * 60.0 + 3600
    admitted = await asyncio.gather(*(shared.admit("a", MINUTE, 5, expires) for _ in range(12)))
    assert sum(admitted) == 5  # exact at once, nothing waits for a flush
    (bucket,) = await store.read_usage("a", MINUTE, MINUTE)
    assert bucket.requests == 5
    await shared.aclose()


def _fire(url: str, n: int) -> list[int]:
    async def run() -> list[int]:
        async with httpx.AsyncClient(base_url=url, timeout=60) as client:
            answers = await asyncio.gather(
                *(client.post("/v1/chat/completions", json=HELLO) for _ in range(n))
            )
        return [a.status_code for a in answers]

    return asyncio.run(run())


def _totals(table: TableView) -> tuple[int, int, int]:
    return (
        table.usage_total("a", "requests"),
        table.usage_total("a", "successes"),
        table.usage_total("a", "inflight"),
    )


def test_coalesced_counters_equal_the_exact_sums(
    start_gateway: Callable[..., Any], upstream_a: MockUpstream, table: TableView
) -> None:
    gw = start_gateway(config(deployment("a", upstream_a)), env={"EDGEPROXY_COALESCE_MS": "25"})
    assert _fire(gw.base_url, 200) == [200] * 200
    wait_for(lambda: _totals(table), lambda seen: seen == (200, 200, 0), "the exact sums")


def test_a_gateway_that_stops_writes_its_pending_counters(
    start_gateway: Callable[..., Any], upstream_a: MockUpstream, table: TableView
) -> None:
    gw = start_gateway(config(deployment("a", upstream_a)), env={"EDGEPROXY_COALESCE_MS": "600000"})
    assert _fire(gw.base_url, 20) == [200] * 20
    assert _totals(table) == (0, 0, 0)  # nothing written yet: a ten-minute window
    gw.stop()  # the ASGI lifespan's shutdown closes the gateway: the last flush
    assert _totals(table) == (20, 20, 0)
