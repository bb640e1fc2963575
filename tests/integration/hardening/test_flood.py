"""1,000 idle connections, no key needed, do not lock anyone out of the local server.

Against the server ``make run`` starts (``edgeproxy_dev.runner``, its own
process, default limits): before, uvicorn's ``limit_concurrency`` (512)
counted idle connections, and about 600 of them had 20 of 25 normal
requests answered 503. Now idle connections are bounded by the head and
keep-alive timeouts and by a connection ceiling, and only requests in
progress count against the request limit.
"""

from __future__ import annotations

import resource
import socket
import time
from collections.abc import Callable
from typing import Any

import httpx

from edgeproxy_dev.mock_upstream import MockUpstream
from edgeproxy_dev.serving import HEAD_TIMEOUT_S, MAX_CONNECTIONS
from tests.integration.hardening.helpers import CHAT, config, deployment

IDLE = 1000
NORMAL = 25
assert IDLE < MAX_CONNECTIONS  # the ceiling is not what this test exercises


def test_normal_requests_are_served_with_1000_idle_connections_open(
    spawn_gateway: Callable[..., Any], upstream_a: MockUpstream
) -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = IDLE + 256
    if soft != resource.RLIM_INFINITY and soft < wanted:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(wanted, hard), hard))
    gateway = spawn_gateway(config(deployment("a", upstream_a)))
    port = int(gateway.base_url.rsplit(":", 1)[1])
    idle: list[socket.socket] = []
    opened = time.monotonic()
    try:
        for _ in range(IDLE):
            idle.append(socket.create_connection(("127.0.0.1", port), timeout=5))
        with httpx.Client(base_url=gateway.base_url, timeout=10) as client:
            statuses = [
                client.post("/v1/chat/completions", json=CHAT).status_code for _ in range(NORMAL)
            ]
            health = [
                httpx.get(gateway.base_url + "/health", timeout=10).status_code
                for _ in range(NORMAL)
            ]  # a new connection each, while the idle ones are still open
        assert statuses == [200] * NORMAL
        assert health == [200] * NORMAL
        # Only the head deadline or the ceiling closes an idle connection, and neither had
        # come: all 1,000 were open while every request above was served.
        assert time.monotonic() - opened < HEAD_TIMEOUT_S
        assert len(idle) == IDLE
    finally:
        for sock in idle:
            sock.close()
