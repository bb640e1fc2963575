"""A client that leaves cancels its upstream request and releases the in-flight count."""

from __future__ import annotations

import json
import socket

import httpx
import pytest

from edgeproxy_dev.mock_upstream import MockUpstream
from tests.fixtures.configs import config, deployment
from tests.fixtures.table import TableView, wait_for
from tests.integration.resilience.helpers import CLIENT_KEY, HELLO, keys, router

LONG = " ".join(f"word{i}" for i in range(200))
# Deadlines far longer than the test: only the client leaving can end these attempts.
PATIENT = {"response_ms": 30_000, "idle_ms": 30_000, "total_ms": 60_000}
# A first token (and a header hold) later than anything the test waits for (``settled``
# polls twice for at most WAIT_S each): settling before it proves the client's leaving did it,
# however slow the machine.
LATE_MS = 60_000


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


def hang_up_once_the_upstream_is_called(gw, upstream: MockUpstream, *, stream: bool) -> None:
    """Send a chat request, wait for its upstream call, and close the connection."""
    body = json.dumps({"model": "fast-chat", "messages": HELLO, "stream": stream}).encode()
    url = httpx.URL(gw.base_url)
    assert url.host
    assert url.port
    head = (
        f"POST /v1/chat/completions HTTP/1.1\r\nHost: {url.host}:{url.port}\r\n"
        f"Authorization: Bearer {CLIENT_KEY}\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    ).encode()
    with socket.create_connection((url.host, url.port)) as sock:
        sock.sendall(head + body)
        wait_for_upstream_call(upstream)  # no response headers yet: the client leaves now


def test_leaving_during_the_header_hold(
    start_gateway, upstream_a: MockUpstream, table: TableView
) -> None:
    gw = start_gateway(
        config(
            deployment("a", upstream_a),
            router=router(
                json=PATIENT | {"idle_ms": None}, stream=PATIENT, stream_header_hold_ms=LATE_MS
            ),
            gateway=keys(),
        )
    )
    # Headers come at once, the first token only after LATE_MS: routing is still in the hold.
    upstream_a.set_faults([{"first_token_delay_ms": LATE_MS, "keepalive_ms": 200}])
    hang_up_once_the_upstream_is_called(gw, upstream_a, stream=True)
    settled(upstream_a, table)  # long before the hold or the first token could end it


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
    upstream_a.set_faults([{"first_token_delay_ms": LATE_MS, "keepalive_ms": 200}])
    client, req = request(gw, stream=True)
    with client:
        response = client.send(req, stream=True)  # opened with 200 after the 0.3 s hold
        assert response.status_code == 200
        response.close()
    settled(upstream_a, table)  # long before the first token could end it


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
    hang_up_once_the_upstream_is_called(gw, upstream_a, stream=False)
    settled(upstream_a, table)  # cancelled: the 30 s response deadline is far off
