"""One slow upstream, or clients that never read, cannot take a long-lived process's capacity.

Before, the upstream transport capped all of a process's upstream connections
at 100 across hosts: 100 calls to an upstream that sends its headers and then
a byte a second held every connection, and requests to any other deployment
waited for one until they timed out. A client that never read its stream
held its upstream connection and its request slot for as long as the
upstream kept sending.
"""

from __future__ import annotations

import asyncio
import socket
import statistics
import time
from collections.abc import Callable, Iterator

import httpx
import pytest

from edgeproxy.upstream.transport import MAX_PER_HOST
from edgeproxy_dev.mock_upstream import MockUpstream
from tests.fixtures.clock import FleetClock
from tests.fixtures.gateway import GatewayServer, store
from tests.fixtures.table import wait_for
from tests.integration.hardening.helpers import HELLO, config, deployment, fast_router

SLOW_CALLS = 120
NEVER_READ = 200
HEALTHY = 20
STALL_S = 1.0
# Two rounds of the host's share, each cut STALL_S after its buffers fill; the embedded store
# (one call at a time) paces the 200 requests' writes: a run took about 80 s on a loaded
# 2-core machine. A deadline, not a measure: far below the streams' own 600 s budget.
CUT_WITHIN_S = 180.0
CLIENT_TIMEOUT_S = 10.0  # below the slow deployment's deadline: a request queued behind it fails
SLOW = {"model": "slow-chat", "messages": HELLO}
FAST = {"model": "fast-chat", "messages": HELLO}


@pytest.fixture
def gateway(
    dynamo_endpoint: str,
    gateway_table: str,
    upstream_a: MockUpstream,
    upstream_b: MockUpstream,
    clock: FleetClock,
) -> Iterator[GatewayServer]:
    cfg = config(
        deployment("slow", upstream_a, model="slow-chat"),
        deployment("fast", upstream_b, model="fast-chat"),
        router=fast_router(
            json={"response_ms": 15_000, "total_ms": 16_000},
            stream={"response_ms": 15_000, "idle_ms": 15_000, "total_ms": 600_000},
        ),
    )
    store(dynamo_endpoint, gateway_table, cfg)
    # Small kernel buffers (accepted sockets inherit them): a client that never reads fills
    # them within a few events, so the stall bound, not the buffers' size, is what is measured.
    listener = socket.socket()
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 8192)
    listener.bind(("127.0.0.1", 0))
    server = GatewayServer(
        dynamo_endpoint, gateway_table, clock.now, listener=listener, write_stall_s=STALL_S
    ).start()
    yield server
    server.stop()
    listener.close()


async def _timed(client: httpx.AsyncClient, body: dict[str, object]) -> tuple[int, float]:
    started = time.monotonic()
    response = await client.post("/v1/chat/completions", json=body, timeout=CLIENT_TIMEOUT_S)
    return response.status_code, time.monotonic() - started


async def _wait_until(check: Callable[[], bool], what: str, within_s: float = 30.0) -> None:
    deadline = time.monotonic() + within_s
    while not check():
        assert time.monotonic() < deadline, f"{what}: never happened"
        await asyncio.sleep(0.05)


def test_a_slow_upstream_leaves_other_deployments_served(
    gateway: GatewayServer, upstream_a: MockUpstream, upstream_b: MockUpstream
) -> None:
    upstream_a.set_faults([], persistent={"trickle": True})

    async def run() -> None:
        limits = httpx.Limits(max_connections=SLOW_CALLS + HEALTHY + 10)
        async with httpx.AsyncClient(base_url=gateway.base_url, limits=limits) as client:
            baseline = [await _timed(client, FAST) for _ in range(5)]
            slow = [
                asyncio.ensure_future(client.post("/v1/chat/completions", json=SLOW, timeout=60))
                for _ in range(SLOW_CALLS)
            ]
            # Every connection the slow upstream may have is taken (the rest wait for one).
            await _wait_until(
                lambda: upstream_a.open_connections >= MAX_PER_HOST, "the slow host's share taken"
            )
            during = await asyncio.gather(*(_timed(client, FAST) for _ in range(HEALTHY)))
            assert upstream_a.open_connections <= MAX_PER_HOST
            assert [status for status, _ in during] == [200] * HEALTHY
            # Generous: the point is that none waited for the slow host's connections.
            typical = statistics.median(s for _, s in baseline)
            assert statistics.median(s for _, s in during) < max(2.0, 20 * typical)
            # The stuck attempts end on their own deadline, and their connections go with them.
            answers = await asyncio.gather(*slow)
            assert all(answer.status_code >= 500 for answer in answers)
            assert all("error" in answer.json() for answer in answers)
            await _wait_until(lambda: upstream_a.open_connections == 0, "slow connections closed")

    asyncio.run(run())
    assert {r["body"]["model"] for r in upstream_b.requests()} == {"mock-small"}


def _never_read(port: int) -> socket.socket:
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # fills at once: never read
    sock.settimeout(5)
    sock.connect(("127.0.0.1", port))
    body = b'{"model": "slow-chat", "stream": true, "messages": [{"role": "user", "content": "x"}]}'
    sock.sendall(
        b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        b"Content-Length: %d\r\n\r\n%s" % (len(body), body)
    )
    return sock


def _cut(sock: socket.socket) -> bool:
    """Whether the gateway closed ``sock`` (read what it buffered up to the end)."""
    sock.settimeout(0.5)
    try:
        while sock.recv(1 << 20):
            pass
    except TimeoutError:
        return False  # still open, still sending
    except ConnectionResetError:
        return True
    return True


def test_clients_that_never_read_their_stream_are_cut_off_and_free_capacity(
    gateway: GatewayServer, upstream_a: MockUpstream
) -> None:
    upstream_a.set_faults([], persistent={"endless_stream": True})
    socks = [_never_read(gateway.port) for _ in range(NEVER_READ)]
    try:
        wait_for(lambda: upstream_a.open_connections, lambda n: n > 0, "streams under way")
        # Each is cut within the stall bound of its buffer filling; those waiting for one of
        # the host's connections get theirs as the first are cut, and are cut in turn.
        started = time.monotonic()
        while upstream_a.open_connections > 0:
            assert time.monotonic() - started < CUT_WITHIN_S, "upstreams never released"
            time.sleep(0.1)
        print(f"{NEVER_READ} never-read streams cut in {time.monotonic() - started:.1f} s")
        # The upstreams go first; a client's socket is closed just after its stream's upstream.
        open_socks = list(socks)
        while open_socks:
            assert time.monotonic() - started < CUT_WITHIN_S, f"{len(open_socks)} never cut"
            open_socks = [sock for sock in open_socks if not _cut(sock)]
    finally:
        for sock in socks:
            sock.close()
    upstream_a.set_faults([], persistent=None)
    answer = httpx.post(gateway.base_url + "/v1/chat/completions", json=SLOW, timeout=10)
    assert answer.status_code == 200
