"""The request log's bound: a store that cannot keep up with the log stalls no request.

The gateway talks to the embedded DynamoDB through a relay that holds every
log write (``tests/fixtures/holding.py``) while requests go on being served:
they are answered while the log's writes are still held, and the log's
buffer stays at its bound, dropping and counting what does not fit.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from urllib.parse import urlsplit

import httpx
import pytest

from edgeproxy.service.usage.log_buffer import LogBuffer
from edgeproxy.state.usage_log import RequestRecord
from edgeproxy_dev.mock_upstream import MockUpstream
from tests.fixtures.clock import FleetClock
from tests.fixtures.gateway import GatewayServer, store
from tests.fixtures.holding import HoldingRelay
from tests.fixtures.table import wait_for
from tests.integration.usage.helpers import HELLO, gateway_config, priced

BOUND = 20  # records the buffer may hold in this test (the shipped bound is 20,000)
REQUESTS = 120
PER_REQUEST_S = 10.0  # far below the held writes' wait (they are held until released)


@pytest.fixture
def relay(dynamo_endpoint: str) -> Iterator[HoldingRelay]:
    port = urlsplit(dynamo_endpoint).port
    assert port is not None
    with HoldingRelay(port) as held:
        yield held


def live_records() -> int:
    return sum(isinstance(o, RequestRecord) for o in gc.get_objects())


def test_requests_are_served_while_the_log_is_held_and_its_buffer_stays_bounded(
    dynamo_endpoint: str,
    gateway_table: str,
    relay: HoldingRelay,
    upstream_a: MockUpstream,
    clock: FleetClock,
) -> None:
    store(dynamo_endpoint, gateway_table, gateway_config(priced("a", upstream_a)))
    gateway = GatewayServer(
        relay.endpoint, gateway_table, clock.now, env={"EDGEPROXY_COALESCE_MS": "25"}
    ).start()
    try:
        body = {"model": "fast-chat", "messages": HELLO}
        with httpx.Client(base_url=gateway.base_url, timeout=PER_REQUEST_S) as client:
            assert client.post("/v1/chat/completions", json=body).status_code == 200
            assert gateway.gateway is not None  # built on the first request
            buffer = gateway.gateway.usage_log.buffer
            assert isinstance(buffer, LogBuffer)
            buffer.max_records = BOUND
            relay.hold()
            client.post("/v1/chat/completions", json=body)
            # The window's flush is sent and held: from here on the log cannot write.
            wait_for(lambda: relay.held, lambda held: held > 0, "a log write held")
            before = live_records()
            for _ in range(REQUESTS):
                answer = client.post("/v1/chat/completions", json=body)
                assert answer.status_code == 200, answer.text
            # Every request was answered while the log's writes were still held.
            assert relay.held > 0
            assert buffer.pending <= BOUND + 1  # the records, and the one bucket's sum
            # All but the bound were dropped (a flush sent just as the hold began may carry one).
            assert buffer.dropped_records >= REQUESTS - BOUND - 1
            assert live_records() - before <= BOUND + 5  # the dropped ones are not kept anywhere
            relay.release()
            wait_for(lambda: buffer.pending, lambda pending: pending == 0, "the log caught up")
    finally:
        relay.release()
        gateway.stop()
