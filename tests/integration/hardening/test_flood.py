"""1,000 idle connections, no key needed, do not lock anyone out of the local server.

The server is the one ``make run`` starts (``server_config``, the runner's
limits), in-process, with one change: a 60 s head deadline instead of 10 s,
so that on a loaded test machine the idle connections are certainly still
open while the normal requests are served (only the head deadline or the
connection ceiling closes them). Before, uvicorn's ``limit_concurrency``
(512) counted idle connections, and about 600 of them had 20 of 25 normal
requests answered 503. Now only requests in progress count against the
request limit.
"""

from __future__ import annotations

import resource
import socket
import time

import httpx

from edgeproxy_dev.mock_upstream import MockUpstream
from edgeproxy_dev.serving import MAX_CONNECTIONS
from tests.fixtures.clock import FleetClock
from tests.fixtures.gateway import GatewayServer, store
from tests.integration.hardening.helpers import CHAT, config, deployment

IDLE = 1000
NORMAL = 25
HEAD_S = 60.0
assert IDLE < MAX_CONNECTIONS  # the ceiling is not what this test exercises


def test_normal_requests_are_served_with_1000_idle_connections_open(
    dynamo_endpoint: str, gateway_table: str, upstream_a: MockUpstream, clock: FleetClock
) -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = 2 * IDLE + 256  # both ends of every connection are in this process
    if soft != resource.RLIM_INFINITY and soft < wanted:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(wanted, hard), hard))
    store(dynamo_endpoint, gateway_table, config(deployment("a", upstream_a)))
    gateway = GatewayServer(
        dynamo_endpoint, gateway_table, clock.now, head_timeout_s=HEAD_S
    ).start()
    port = gateway.port
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
        assert time.monotonic() - opened < HEAD_S
        assert len(idle) == IDLE
    finally:
        for sock in idle:
            sock.close()
        gateway.stop()
