"""One client key's stalled requests hold at most its share of a process's request slots.

Before, 512 complete request heads with a valid ``free`` key and a
``Content-Length`` whose body never came held all 512 request slots of the
local server for the body deadline, and every other caller got 503 (20 of
20). Now a key holds at most ``MAX_KEY_REQUESTS`` of them; its requests
beyond that are answered 429 before their body is read.

The body deadline here is 60 s (the default is 10 s), so that on a loaded
machine the stalled heads certainly still hold their slots while the other
key's requests are served: only the share is exercised.
"""

from __future__ import annotations

import resource
import selectors
import socket
import time
from collections.abc import Iterator

import httpx
import pytest

from edgeproxy.service.limits.slots import MAX_KEY_REQUESTS
from edgeproxy_dev.mock_upstream import MockUpstream
from edgeproxy_dev.serving import MAX_REQUESTS
from tests.fixtures.clock import FleetClock
from tests.fixtures.gateway import GatewayServer, store
from tests.integration.hardening.helpers import CHAT, config, deployment
from tests.integration.keys.helpers import ENV, bearer, create_key

STALLED = 1000
NORMAL = 20
BODY_S = 60.0
assert MAX_KEY_REQUESTS < MAX_REQUESTS < STALLED  # one key alone would fill the process


@pytest.fixture
def gateway(
    dynamo_endpoint: str, gateway_table: str, upstream_a: MockUpstream, clock: FleetClock
) -> Iterator[GatewayServer]:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = 2 * STALLED + 256  # both ends of every connection are in this process
    if soft != resource.RLIM_INFINITY and soft < wanted:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(wanted, hard), hard))
    cfg = config(deployment("a", upstream_a), gateway={"body_read_timeout_seconds": BODY_S})
    store(dynamo_endpoint, gateway_table, cfg)
    server = GatewayServer(dynamo_endpoint, gateway_table, clock.now, env=ENV).start()
    yield server
    server.stop()


def _stalled_head(port: int, key: str) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port), timeout=5)
    sock.sendall(
        b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        b"Authorization: Bearer %s\r\nContent-Length: 100\r\n\r\n" % key.encode()
    )
    return sock


def _answers(socks: list[socket.socket], wanted: int, within_s: float) -> dict[int, bytes]:
    """What each socket that answered first received (by index), once ``wanted`` have."""
    answered: dict[int, bytes] = {}
    with selectors.DefaultSelector() as sel:  # epoll: descriptors beyond select()'s 1024
        for i, sock in enumerate(socks):
            sel.register(sock, selectors.EVENT_READ, i)
        deadline = time.monotonic() + within_s
        while len(answered) < wanted and time.monotonic() < deadline:
            for found, _ in sel.select(timeout=0.5):
                sel.unregister(found.fileobj)
                try:
                    answered[found.data] = socks[found.data].recv(65536)
                except OSError:
                    answered[found.data] = b""
    return answered


def test_one_keys_stalled_bodies_leave_other_keys_served(gateway: GatewayServer) -> None:
    hostile = create_key(gateway.base_url, role="free")["key"]
    other = create_key(gateway.base_url, role="free")["key"]
    socks = [_stalled_head(gateway.port, hostile) for _ in range(STALLED)]
    try:
        # Every head beyond the key's share is refused at once (429; or 503 while the
        # process's slots were all taken in the burst); exactly the share stays held.
        answers = _answers(socks, STALLED - MAX_KEY_REQUESTS, within_s=60)
        statuses = {answer[:12] for answer in answers.values()}
        assert len(answers) == STALLED - MAX_KEY_REQUESTS, statuses
        assert statuses <= {b"HTTP/1.1 429", b"HTTP/1.1 503"}, statuses
        assert any(b'"code":"rate_limit_exceeded"' in a for a in answers.values())
        with httpx.Client(base_url=gateway.base_url, timeout=10) as client:
            served = [
                client.post("/v1/chat/completions", json=CHAT, headers=bearer(other)).status_code
                for _ in range(NORMAL)
            ]
        assert served == [200] * NORMAL
        # The share is still held (nothing else closed them): only the share was exercised.
        held = [sock for i, sock in enumerate(socks) if i not in answers]
        assert _answers(held, 1, within_s=0.5) == {}
    finally:
        for sock in socks:
            sock.close()
