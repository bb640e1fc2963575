"""Two gateway processes sharing one table: circuits are one truth for the whole fleet.

One gateway runs in its own OS process (``spawn_gateway``), the other in this
process (``start_gateway``); both use the test's table on the embedded
DynamoDB, which applies each write atomically, as DynamoDB does. Both run
on the test's clock, so the cooldown passes by moving it.
"""

from __future__ import annotations

import asyncio
import random
from typing import Any

import httpx

from edgeproxy.routing.snapshot import Circuit, CircuitState
from edgeproxy.state.dynamodb.dynamo import DynamoStore
from edgeproxy.state.store import SnapshotRequest
from edgeproxy_dev.dynamo_server import client_kwargs
from edgeproxy_dev.mock_upstream import MockUpstream
from edgeproxy_dev.runner import local_session
from edgeproxy_dev.template import default_template_path, table_schema
from tests.fixtures.clock import FleetClock
from tests.fixtures.configs import config, deployment
from tests.fixtures.table import wait_for
from tests.integration.resilience.helpers import (
    CLIENT_KEY,
    HELLO,
    deployment_status,
    keys,
    model_requests,
    router,
)

ALLOWED_FAILS = 3
COOLDOWN_S = 30  # long, so that no burst outlasts it; the test moves the clock past it
PROBE_LATENCY_S = 1.5


def _read_circuit(endpoint: str, table: str, dep_id: str) -> Circuit:
    async def read() -> Circuit:
        schema = table_schema(default_template_path())
        async with local_session().client("dynamodb", **client_kwargs(endpoint)) as dynamo:
            snapshot = await DynamoStore(dynamo, table, schema, random.Random(0)).read_pool(
                SnapshotRequest(pool="fast-chat", deployment_ids=[dep_id], domains=[], minute=0)
            )
        return snapshot.circuit(dep_id)

    return asyncio.run(read())


def _burst(urls: list[str], count: int) -> list[httpx.Response]:
    """``count`` chat requests at once, spread round-robin over the gateways."""

    async def fire() -> list[httpx.Response]:
        limits = httpx.Limits(max_connections=count)
        async with httpx.AsyncClient(timeout=30, limits=limits) as http:
            calls: list[Any] = [
                http.post(
                    urls[i % len(urls)] + "/v1/chat/completions",
                    json={"model": "fast-chat", "messages": HELLO},
                    headers={"authorization": f"Bearer {CLIENT_KEY}"},
                )
                for i in range(count)
            ]
            return list(await asyncio.gather(*calls))

    return asyncio.run(fire())


def test_fifty_failures_over_two_processes_open_the_circuit_once_and_probe_once(
    spawn_gateway,
    start_gateway,
    dynamo_endpoint: str,
    gateway_table: str,
    clock: FleetClock,
    upstream_a: MockUpstream,
) -> None:
    cfg = config(
        deployment("a", upstream_a),
        router=router(
            circuit={"allowed_fails": ALLOWED_FAILS, "cooldown_seconds": COOLDOWN_S},
            json={"max_attempts": 1, "response_ms": 20_000},  # a loaded machine is slow, not down
        ),
        gateway=keys(),
    )
    remote = spawn_gateway(cfg)
    local = start_gateway(cfg)
    urls = [remote.base_url, local.base_url]
    assert {a.status_code for a in _burst(urls, 2)} == {200}  # both warm, circuit untouched
    upstream_a.clear()
    upstream_a.set_faults([], persistent={"status": 500})

    started = clock.now()
    answers = _burst(urls, 50)
    statuses = sorted({a.status_code for a in answers})
    assert set(statuses) <= {500, 503}
    overloaded = [a for a in answers if a.status_code == 503]
    assert all(a.json()["error"]["code"] == "model_overloaded" for a in overloaded)
    called = len(model_requests(upstream_a))
    assert called == sum(a.status_code == 500 for a in answers)
    assert called > ALLOWED_FAILS  # enough failures reached the upstream to open it

    # A failure's circuit write runs beside its answer: the last one may land after it.
    circuit = wait_for(
        lambda: _read_circuit(dynamo_endpoint, gateway_table, "a"),
        lambda c: c.state is CircuitState.OPEN,
        "the circuit opened",
    )
    # One write per counted failure, then exactly one opening; late failures changed nothing.
    assert circuit.version == ALLOWED_FAILS + 1
    assert started <= circuit.opened_at <= clock.now()
    assert circuit.open_until == circuit.opened_at + COOLDOWN_S

    # While open, neither process asks the upstream.
    upstream_a.clear()
    assert clock.now() < circuit.open_until - 0.5, "the burst was too slow for this check"
    assert {a.status_code for a in _burst(urls, 6)} == {503}
    assert model_requests(upstream_a) == []

    # After the cooldown, exactly one request in the fleet owns the probe.
    clock.advance(max(0.0, circuit.open_until - clock.now()) + 0.1)
    assert [deployment_status(url, "fast-chat")["a"]["status"] for url in urls] == [
        "half_open",
        "half_open",
    ]
    upstream_a.set_faults([], persistent={"latency_ms": int(PROBE_LATENCY_S * 1000)})
    answers = _burst(urls, 30)
    seen = model_requests(upstream_a)
    probe_started = seen[0]["time"]
    during_probe = [r for r in seen if r["time"] < probe_started + PROBE_LATENCY_S]
    assert len(during_probe) == 1
    assert sum(a.status_code == 200 for a in answers) == len(seen)
    assert {a.status_code for a in answers} == {200, 503}

    closed = _read_circuit(dynamo_endpoint, gateway_table, "a")
    assert closed.state is CircuitState.CLOSED
    upstream_a.set_faults([])
    assert {a.status_code for a in _burst(urls, 4)} == {200}
