"""Capacity caps (``max_parallel_requests``) hold across a fleet of gateways.

Two gateway processes share one table; the loopback upstream counts how many
model requests it answers at once. Each answer takes 300 ms, so twelve
concurrent requests over a cap of 2 must queue: they wait for a slot
(``capacity_wait_seconds``) and are all answered, and the upstream never sees
more than two at once. With no wait allowed, the requests over the cap get an
honest 429 with ``Retry-After`` instead.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx

from edgeproxy_dev.mock_upstream import MockUpstream
from tests.fixtures.clock import FleetClock
from tests.fixtures.configs import config, deployment
from tests.integration.resilience.helpers import keys, post_chat, router

CAP = 2
ANSWER_MS = 300
REQUESTS = 12


def _burst(urls: list[str], count: int) -> list[httpx.Response]:
    with ThreadPoolExecutor(count) as pool:
        futures = [pool.submit(post_chat, urls[i % len(urls)], "fast-chat") for i in range(count)]
        return [f.result() for f in futures]


def test_in_flight_attempts_never_pass_the_cap_across_two_gateways(
    spawn_gateway: Any, start_gateway: Any, clock: FleetClock, upstream_a: MockUpstream
) -> None:
    upstream_a.set_faults([], persistent={"latency_ms": ANSWER_MS})
    cfg = config(
        deployment("a", upstream_a, max_parallel_requests=CAP),
        router=router(capacity_wait_seconds=10),
        gateway=keys(),
    )
    remote, local = spawn_gateway(cfg), start_gateway(cfg)
    answers = _burst([remote.base_url, local.base_url], REQUESTS)
    assert [a.status_code for a in answers] == [200] * REQUESTS
    assert upstream_a.peak_concurrency == CAP  # reached, never passed
    assert len(upstream_a.requests()) == REQUESTS


def test_without_a_wait_the_requests_over_the_cap_get_429_with_retry_after(
    spawn_gateway: Any, start_gateway: Any, clock: FleetClock, upstream_a: MockUpstream
) -> None:
    upstream_a.set_faults([], persistent={"latency_ms": 1500})
    cfg = config(
        deployment("a", upstream_a, max_parallel_requests=1),
        router=router(capacity_wait_seconds=0),
        gateway=keys(),
    )
    remote, local = spawn_gateway(cfg), start_gateway(cfg)
    answers = _burst([remote.base_url, local.base_url], 4)
    statuses = sorted(a.status_code for a in answers)
    assert statuses == [200, 429, 429, 429]
    refused = [a for a in answers if a.status_code == 429]
    assert all(a.json()["error"]["code"] == "rate_limit_exceeded" for a in refused)
    assert all(float(a.headers["retry-after"]) >= 1 for a in refused)
    assert upstream_a.peak_concurrency == 1
