"""A client that leaves cancels its upstream request and releases the in-flight count."""

from __future__ import annotations

import time

import httpx
import pytest

from edgeproxy_dev.mock_upstream import MockUpstream
from tests.fixtures.configs import config, deployment
from tests.fixtures.table import TableView, wait_for
from tests.integration.resilience.helpers import CLIENT_KEY, HELLO, keys, router

LONG = " ".join(f"word{i}" for i in range(200))
# Deadlines far longer than the test: only the client leaving can end these attempts.
PATIENT = {"response_ms": 30_000, "idle_ms": 30_000, "total_ms": 60_000}


@pytest.fixture
def gw(start_gateway, upstream_a: MockUpstream):
    return start_gateway(
        config(
            deployment("a", upstream_a),
            router=router(json=PATIENT | {"idle_ms": None}, stream=PATIENT),
            gateway=keys(),
        )
    )


def request(gw, *, stream: bool, read: float = 30.0) -> tuple[httpx.Client, httpx.Request]:
    """A client and a chat request whose read timeout (``read``) is when the client hangs up."""
    client = httpx.Client(timeout=httpx.Timeout(30.0, read=read))
    payload = {"model": "fast-chat", "messages": HELLO, "stream": stream}
    headers = {"authorization": f"Bearer {CLIENT_KEY}"}
    return client, client.build_request(
        "POST", gw.base_url + "/v1/chat/completions", json=payload, headers=headers
    )


def settled(upstream: MockUpstream, table: TableView) -> None:
    """The upstream connection is closed and the attempt no longer counts as in flight."""
    wait_for(lambda: upstream.open_connections, lambda n: n == 0, "upstream connection closed")
    table.wait_inflight_zero("a")
    assert table.successes("a") == 0  # abandoned, not counted as a success


def wait_for_upstream_call(upstream: MockUpstream) -> None:
    wait_for(lambda: len(upstream.requests()), lambda n: n > 0, "the upstream call")


def test_leaving_during_the_header_hold(gw, upstream_a: MockUpstream, table: TableView) -> None:
    # Headers come at once, the first token only after 20 s: routing is still in the hold.
    upstream_a.set_faults([{"first_token_delay_ms": 20_000, "keepalive_ms": 200}])
    client, req = request(gw, stream=True, read=1.0)
    with client, pytest.raises(httpx.ReadTimeout):
        client.send(req, stream=True)  # hangs up after 1 s
    started = time.monotonic()
    settled(upstream_a, table)
    assert time.monotonic() - started < 3  # well before the 10 s hold or the first token


def test_leaving_while_keepalives_hold_the_opened_stream(
    start_gateway, upstream_a: MockUpstream, table: TableView
) -> None:
    gw = start_gateway(
        config(
            deployment("a", upstream_a),
            router=router(
                json=PATIENT | {"idle_ms": None}, stream=PATIENT, stream_header_hold_ms=300
            ),
            gateway=keys(),
        )
    )
    upstream_a.set_faults([{"first_token_delay_ms": 20_000, "keepalive_ms": 200}])
    client, req = request(gw, stream=True)
    with client:
        response = client.send(req, stream=True)  # opened with 200 after the 0.3 s hold
        assert response.status_code == 200
        response.close()
    started = time.monotonic()
    settled(upstream_a, table)
    assert time.monotonic() - started < 3


def test_leaving_mid_stream(gw, upstream_a: MockUpstream, table: TableView) -> None:
    upstream_a.set_faults([{"content": LONG, "chunk_delay_ms": 100}])
    client, req = request(gw, stream=True)
    with client:
        response = client.send(req, stream=True)
        for line in response.iter_lines():
            if '"content":"word' in line:
                break  # saw content: the stream is committed and relayed
        response.close()
    settled(upstream_a, table)


def test_leaving_during_a_json_call(gw, upstream_a: MockUpstream, table: TableView) -> None:
    upstream_a.set_faults([{"stall": True}])  # the mock sees the hang-up (it reads)
    client, req = request(gw, stream=False, read=1.0)
    with client, pytest.raises(httpx.ReadTimeout):
        client.send(req)
    started = time.monotonic()
    wait_for_upstream_call(upstream_a)
    settled(upstream_a, table)
    assert time.monotonic() - started < 3  # cancelled, not waited out
