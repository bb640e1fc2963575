"""The health job against a running gateway's table: what metric strategies then route on."""

from __future__ import annotations

import asyncio
import random
from collections import Counter

import aioboto3
import httpx

from edgeproxy.jobs.health import HealthJob
from edgeproxy.routing.snapshot import Health
from edgeproxy.state.dynamodb.dynamo import DynamoStore
from edgeproxy_dev.aws import client_kwargs
from edgeproxy_dev.mock_upstream import MockUpstream
from edgeproxy_dev.template import default_template_path, table_schema
from tests.fixtures.clock import FleetClock
from tests.fixtures.configs import config, deployment
from tests.fixtures.table import TableView, wait_for

REQUESTS = 200
EWMA_WARMUP = 30


def run_job(endpoint: str, table: str, now: float) -> list[Health]:
    async def run() -> list[Health]:
        async with aioboto3.Session().client("dynamodb", **client_kwargs(endpoint)) as client:
            store = DynamoStore(
                client, table, table_schema(default_template_path()), random.Random(0)
            )
            return await HealthJob(store, lambda: now).run()

    return asyncio.run(run())


def test_health_aware_without_traffic_splits_by_weight_after_a_job_run(
    start_gateway,
    dynamo_endpoint: str,
    gateway_table: str,
    clock: FleetClock,
    upstream_a: MockUpstream,
    upstream_b: MockUpstream,
) -> None:
    gw = start_gateway(
        config(
            deployment("a", upstream_a, weight=3),
            deployment("b", upstream_b, weight=1),
            router={"strategy": "health-aware", "sticky": {"enabled": False}},
        )
    )
    into = clock.now() % 60
    if into > 40:  # both runs below must score the same minute
        clock.advance(60 - into + 1)
    written = run_job(dynamo_endpoint, gateway_table, clock.now())
    # No traffic in the window: each deployment gets an explicit "no data" item.
    assert sorted((h.deployment_id, h.samples) for h in written) == [("a", 0), ("b", 0)]
    # A second run for the same minute changes nothing (idempotent under overlap).
    assert run_job(dynamo_endpoint, gateway_table, clock.now()) == []

    served: Counter[str] = Counter()
    with httpx.Client(base_url=gw.base_url, timeout=30) as client:
        for n in range(REQUESTS):
            answer = client.post(
                "/v1/chat/completions",
                json={"model": "fast-chat", "messages": [{"role": "user", "content": f"#{n}"}]},
            )
            assert answer.status_code == 200
            served[answer.headers["x-edgeproxy-deployment"]] += 1
    # Weighted random, 3:1 (a neutral 0.5 for both used to send all of it to "a"): 0.75, with
    # 4.9 standard deviations (0.031 at 200 requests) either side before a false alarm.
    share = served["a"] / REQUESTS
    assert 0.6 <= share <= 0.9, served


def test_the_latency_ewma_replays_answers_in_the_order_they_finished(
    start_gateway,
    dynamo_endpoint: str,
    gateway_table: str,
    table: TableView,
    clock: FleetClock,
    upstream_a: MockUpstream,
) -> None:
    gw = start_gateway(config(deployment("a", upstream_a)))
    into = clock.now() % 60
    if into > 5:  # every answer below finishes in this one minute
        clock.advance(60 - into + 1)
    upstream_a.set_faults([], persistent={"latency_ms": 100})

    body = {"model": "fast-chat", "messages": [{"role": "user", "content": "hi"}]}
    with httpx.Client(base_url=gw.base_url, timeout=30) as client:
        # One after another, so each answer's latency is the upstream's, not a queue's.
        # 0.8 ** 30 < 0.001: after 30 answers the EWMA holds ~100 whatever it started at.
        for _ in range(EWMA_WARMUP):
            assert client.post("/v1/chat/completions", json=body).status_code == 200
        upstream_a.set_faults([{"latency_ms": 1000}])
        assert client.post("/v1/chat/completions", json=body).status_code == 200
    answers = EWMA_WARMUP + 1
    wait_for(lambda: table.successes("a"), lambda n: n == answers, "every answer counted")
    [health] = run_job(dynamo_endpoint, gateway_table, clock.now())
    # 000's per-request EWMA: 0.8 * ~100 + 0.2 * ~1000 = ~280 (the minute's mean reads 129).
    assert health.ewma_latency_ms is not None
    assert 250 <= health.ewma_latency_ms <= 330, health
