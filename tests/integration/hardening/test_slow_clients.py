"""Slow, idle and vanishing clients: bounded by timeouts and a connection cap, logged quietly."""

from __future__ import annotations

import logging
import socket
import time
from collections.abc import Iterator

import httpx
import pytest

from edgeproxy_dev.mock_upstream import MockUpstream
from tests.fixtures.clock import FleetClock
from tests.fixtures.gateway import GatewayServer, store
from tests.fixtures.table import wait_for
from tests.integration.hardening.helpers import CHAT, config, deployment, fast_router

HEAD_S = 0.5


@pytest.fixture
def gateway(
    dynamo_endpoint: str, gateway_table: str, upstream_a: MockUpstream, clock: FleetClock
) -> Iterator[GatewayServer]:
    cfg = config(
        deployment("a", upstream_a),
        router=fast_router(),
        gateway={"body_read_timeout_seconds": 0.5},
    )
    store(dynamo_endpoint, gateway_table, cfg)
    server = GatewayServer(
        dynamo_endpoint, gateway_table, clock.now, head_timeout_s=HEAD_S, max_connections=4
    ).start()
    yield server
    server.stop()


def read_all(sock: socket.socket) -> bytes:
    received = b""
    while chunk := sock.recv(65536):
        received += chunk
    return received


def test_a_body_that_trickles_in_gets_a_408(gateway: GatewayServer) -> None:
    with socket.create_connection(("127.0.0.1", gateway.port), timeout=5) as sock:
        sock.sendall(
            b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            b'Content-Length: 100\r\n\r\n{"model": '
        )
        started = time.monotonic()
        sock.settimeout(5)
        received = sock.recv(65536)
        assert time.monotonic() - started < 3
        while b"request_timeout" not in received and (more := sock.recv(65536)):
            received += more
    assert received.startswith(b"HTTP/1.1 408"), received
    assert b'"code":"request_timeout"' in received


def test_a_request_head_that_never_completes_is_closed(gateway: GatewayServer) -> None:
    for opening in (b"", b"GET /v1/models HTTP/1.1\r\nHost: x\r\n"):
        with socket.create_connection(("127.0.0.1", gateway.port), timeout=5) as sock:
            sock.sendall(opening)
            started = time.monotonic()
            assert read_all(sock) == b""  # closed without an answer
            assert time.monotonic() - started < HEAD_S + 2
    # Between keep-alive requests too: a second head that stalls is cut.
    with socket.create_connection(("127.0.0.1", gateway.port), timeout=5) as sock:
        sock.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
        first = b""
        while b'"status":"ok"' not in first:
            more = sock.recv(65536)
            assert more, f"closed before the first answer: {first!r}"  # never loop on EOF
            first += more
        assert first.startswith(b"HTTP/1.1 200")
        sock.sendall(b"GET /health HTTP/1.1\r\n")
        started = time.monotonic()
        assert read_all(sock) == b""
        assert time.monotonic() - started < HEAD_S + 2


def test_beyond_the_connection_cap_the_longest_idle_connection_makes_room(
    gateway: GatewayServer,
) -> None:
    idle = [socket.create_connection(("127.0.0.1", gateway.port), timeout=5) for _ in range(4)]
    try:
        answer = httpx.get(gateway.base_url + "/health", timeout=5)
        assert answer.status_code == 200  # idle connections never take a request's place
        assert read_all(idle[0]) == b""  # the oldest idle one was closed for it
    finally:
        for sock in idle:
            sock.close()


def test_a_client_hanging_up_during_its_upload_is_an_info_line_not_an_error(
    gateway: GatewayServer, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.INFO):
        for _ in range(3):
            with socket.create_connection(("127.0.0.1", gateway.port), timeout=5) as sock:
                sock.sendall(
                    b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n"
                    b'Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"model"'
                )
        wait_for(
            lambda: [r for r in caplog.records if "client disconnected" in r.getMessage()],
            lambda found: len(found) == 3,
            "three disconnects logged",
        )
        assert httpx.post(gateway.base_url + "/v1/chat/completions", json=CHAT).status_code == 200
    noisy = [r for r in caplog.records if r.levelno >= logging.ERROR or r.exc_info]
    assert noisy == []
    found = [r for r in caplog.records if "client disconnected" in r.getMessage()]
    assert {r.levelno for r in found} == {logging.INFO}
