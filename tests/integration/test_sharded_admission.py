"""Exact rpm admission on a sharded deployment, raced by two gateway processes on one table.

``counter_shards: 4`` spreads the deployment's minute bucket over four
items; each process admits on a random shard first and borrows from the
others, under per-shard allowances that sum to the limit.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import httpx

from edgeproxy.routing.allowance import allowance
from edgeproxy_dev.mock_upstream import MockUpstream
from tests.fixtures.clock import FleetClock
from tests.fixtures.configs import config, deployment
from tests.fixtures.table import TableView, wait_for

REQUEST = {"model": "fast-chat", "messages": [{"role": "user", "content": "Hello!"}]}
RPM_LIMIT = 22  # allowances 6, 6, 5, 5
SHARDS = 4
CALLERS = 64


def _fresh_minute(clock: FleetClock) -> int:
    """Move to the start of a minute, so a burst cannot straddle two buckets."""
    into = clock.now() % 60
    if into > 20:
        clock.advance(60 - into + 1)
    return int(clock.now() // 60)


def test_an_rpm_limit_over_four_shards_holds_exactly_for_two_processes(
    spawn_gateway: Callable[..., Any],
    start_gateway: Callable[..., Any],
    clock: FleetClock,
    upstream_a: MockUpstream,
    table: TableView,
) -> None:
    cfg = config(deployment("a", upstream_a, rpm_limit=RPM_LIMIT, counter_shards=SHARDS))
    remote = spawn_gateway(cfg)
    local = start_gateway(cfg)
    minute = _fresh_minute(clock)

    async def burst() -> list[httpx.Response]:
        limits = httpx.Limits(max_connections=CALLERS)
        async with httpx.AsyncClient(timeout=30, limits=limits) as http:
            urls = [remote.base_url, local.base_url]
            return list(
                await asyncio.gather(
                    *(
                        http.post(urls[i % 2] + "/v1/chat/completions", json=REQUEST)
                        for i in range(CALLERS)
                    )
                )
            )

    statuses = [a.status_code for a in asyncio.run(burst())]
    assert statuses.count(200) == RPM_LIMIT
    assert statuses.count(429) == CALLERS - RPM_LIMIT
    calls = [r for r in upstream_a.requests() if r["path"] == "/v1/chat/completions"]
    assert len(calls) == RPM_LIMIT  # refused before the upstream was called
    assert table.shard_counters_at("a", "requests", minute, SHARDS) == [
        allowance(RPM_LIMIT, SHARDS, s) for s in range(SHARDS)
    ]
    wait_for(
        lambda: (
            sum(table.shard_counters_at("a", "successes", minute, SHARDS)),
            sum(table.shard_counters_at("a", "inflight", minute, SHARDS)),
        ),
        lambda seen: seen == (RPM_LIMIT, 0),
        "every admitted call's outcome was written to some shard",
    )
    # A later request in the same minute sees the summed count and is refused at once.
    late = httpx.post(local.base_url + "/v1/chat/completions", json=REQUEST, timeout=30)
    assert late.status_code == 429
