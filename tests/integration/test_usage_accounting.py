"""Usage counters through a running gateway: what the admission and outcome writes leave."""

from __future__ import annotations

import asyncio
import random
import time
from typing import Any

import aioboto3
import httpx

from edgeproxy.routing.snapshot import Usage
from edgeproxy.state.dynamodb.dynamo import DynamoStore
from edgeproxy_dev.aws import client_kwargs
from edgeproxy_dev.mock_upstream import MockUpstream
from edgeproxy_dev.template import default_template_path, table_schema
from tests.fixtures.clock import FleetClock
from tests.fixtures.configs import config, deployment

HELLO = {"model": "fast-chat", "messages": [{"role": "user", "content": "Hello!"}]}


def usage(endpoint: str, table: str, deployment_id: str, now: float) -> Usage:
    """The deployment's counters over the minute of ``now`` and the one before."""

    async def read() -> Usage:
        async with aioboto3.Session().client("dynamodb", **client_kwargs(endpoint)) as client:
            store = DynamoStore(
                client, table, table_schema(default_template_path()), random.Random(0)
            )
            minute = int(now // 60)
            buckets = await store.read_usage(deployment_id, minute - 1, minute)
        total: dict[str, Any] = {"deployment_id": deployment_id, "minute": minute}
        for field in ("requests", "inflight", "successes", "failures", "completion_tokens"):
            total[field] = sum(getattr(b, field) for b in buckets)
        return Usage(**total)

    return asyncio.run(read())


def settled(endpoint: str, table: str, deployment_id: str, requests: int, now: float) -> Usage:
    """The counters once the after-response writes have landed (they run in the background)."""
    deadline = time.monotonic() + 5
    while True:
        counted = usage(endpoint, table, deployment_id, now)
        done = counted.successes + counted.failures == requests and counted.inflight == 0
        if done or time.monotonic() > deadline:
            return counted
        time.sleep(0.05)


def test_every_attempt_is_counted_once_and_leaves_no_inflight(
    start_gateway,
    dynamo_endpoint: str,
    gateway_table: str,
    clock: FleetClock,
    upstream_a: MockUpstream,
) -> None:
    gw = start_gateway(config(deployment("a", upstream_a)))
    for _ in range(5):
        assert httpx.post(gw.base_url + "/v1/chat/completions", json=HELLO).status_code == 200
    counted = settled(dynamo_endpoint, gateway_table, "a", 5, clock.now())
    assert (counted.requests, counted.successes, counted.inflight) == (5, 5, 0)
    assert counted.completion_tokens > 0


def test_an_rpm_limit_is_enforced_before_the_upstream_is_called(
    start_gateway, clock: FleetClock, upstream_a: MockUpstream
) -> None:
    gw = start_gateway(config(deployment("a", upstream_a, rpm_limit=3)))
    clock.advance(60 - clock.now() % 60)  # a fresh minute bucket: the limit cannot reset midway
    codes = [
        httpx.post(gw.base_url + "/v1/chat/completions", json=HELLO).status_code for _ in range(5)
    ]
    assert codes == [200, 200, 200, 429, 429]
    assert len([r for r in upstream_a.requests() if r["path"].endswith("/chat/completions")]) == 3


def test_streams_count_tokens_without_showing_the_usage_chunk(
    start_gateway,
    dynamo_endpoint: str,
    gateway_table: str,
    clock: FleetClock,
    upstream_a: MockUpstream,
) -> None:
    gw = start_gateway(config(deployment("a", upstream_a, stream_usage=True)))
    with httpx.stream(
        "POST", gw.base_url + "/v1/chat/completions", json={**HELLO, "stream": True}
    ) as answer:
        events = [line[6:] for line in answer.iter_lines() if line.startswith("data: ")]
    assert events[-1] == "[DONE]"
    assert all('"usage":{' not in e.replace(" ", "") for e in events[:-1])  # not asked: not shown
    [seen] = [r for r in upstream_a.requests() if r["path"].endswith("/chat/completions")]
    assert seen["body"]["stream_options"] == {"include_usage": True}
    assert settled(dynamo_endpoint, gateway_table, "a", 1, clock.now()).completion_tokens > 0

    # A client that asks for usage gets the chunk.
    with httpx.stream(
        "POST",
        gw.base_url + "/v1/chat/completions",
        json={**HELLO, "stream": True, "stream_options": {"include_usage": True}},
    ) as answer:
        events = [line[6:] for line in answer.iter_lines() if line.startswith("data: ")]
    assert any('"usage":{' in e.replace(" ", "") for e in events[:-1])
