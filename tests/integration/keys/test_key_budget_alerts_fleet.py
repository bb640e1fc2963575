"""Budget alerts over two gateway processes: one signed notification per threshold per period.

64 callers on two processes spend a key's $100 budget; every reservation and
settlement on either process returns the settled spend, and the first write
of each threshold's alert item decides who posts it. The receiver on
loopback fails its first post, so the 100% alert reaches it only through the
retry sweep, driven with a later clock rather than a sleep.
"""

from __future__ import annotations

import asyncio
import json
import random
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import aioboto3
import pytest

from edgeproxy.config.alerts import AlertSettings
from edgeproxy.config.egress import EgressSettings
from edgeproxy.routing.alerts import RETRY_CAP_S
from edgeproxy.service.alerts.notifier import AlertNotifier
from edgeproxy.service.alerts.signature import HEADER, verify
from edgeproxy.state.dynamodb.dynamo import DynamoStore
from edgeproxy_dev.dynamo_server import client_kwargs
from edgeproxy_dev.mock_upstream import MockUpstream
from tests.fixtures.clock import FleetClock
from tests.fixtures.configs import LOOPBACK, config, deployment
from tests.fixtures.dynamo import open_client
from tests.fixtures.table import TableView, wait_for
from tests.integration.keys.helpers import ENV, create_key
from tests.integration.keys.test_key_limits_fleet import PRICE, burst

SECRET = "whsec-fleet-0123456789abcdef"
REF = "env:EDGEPROXY_CRED_ALERT_HOOK"


class Receiver(ThreadingHTTPServer):
    """Records each post's raw body and signature; answers 503 to the first ``fail`` posts."""

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.fail = 0
        self.got: list[tuple[bytes, str]] = []
        self.refused = 0
        self.lock = threading.Lock()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/hook"


class _Handler(BaseHTTPRequestHandler):
    server: Receiver

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["content-length"]))
        with self.server.lock:
            failing = self.server.fail > 0
            if failing:
                self.server.fail -= 1
                self.server.refused += 1
            else:
                self.server.got.append((body, self.headers.get(HEADER, "")))
        self.send_response(503 if failing else 204)
        self.send_header("content-length", "0")
        self.end_headers()

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    server = Receiver()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


def _thresholds(receiver: Receiver) -> list[float]:
    with receiver.lock:
        return sorted(json.loads(body)["threshold"] for body, _ in receiver.got)


def test_a_burst_on_two_processes_alerts_once_per_threshold_and_a_failed_post_is_retried(
    spawn_gateway: Callable[..., Any],
    start_gateway: Callable[..., Any],
    clock: FleetClock,
    upstream_a: MockUpstream,
    table: TableView,
    receiver: Receiver,
    dynamo_endpoint: str,
) -> None:
    alerts = {"webhook_url": receiver.url, "webhook_secret_ref": REF}
    cfg = config(
        deployment("a", upstream_a, input_price_per_mtok=PRICE, output_price_per_mtok=PRICE),
        gateway={"alerts": alerts},
    )
    env = {**ENV, "EDGEPROXY_CRED_ALERT_HOOK": SECRET}
    remote = spawn_gateway(cfg, env=env)
    local = start_gateway(cfg, env=env)
    budget = create_key(local.base_url, name="budget", budget_usd=100)
    receiver.fail = 1  # the first post (whichever threshold it carries) is refused

    answers = burst([remote.base_url, local.base_url], budget["key"])
    assert any(a.status_code != 200 for a in answers)  # the budget refused someone

    # One threshold arrives now; the other failed once and waits for the sweep.
    wait_for(lambda: (len(receiver.got), receiver.refused), lambda n: n == (1, 1), "first post")
    # The refused one's retry is recorded after its post failed: wait for it, not for the post.
    wait_for(
        lambda: asyncio.run(_pending(dynamo_endpoint, table)), lambda n: n == [1], "retry kept"
    )
    # Not due yet at the gateways' clock; due once the clock passes the backoff.
    assert asyncio.run(_sweep(dynamo_endpoint, table, alerts, clock.now())) == (0, 1)
    assert asyncio.run(_sweep(dynamo_endpoint, table, alerts, clock.now() + RETRY_CAP_S)) == (1, 0)

    assert _thresholds(receiver) == [0.8, 1.0]
    for body, header in receiver.got:
        assert verify(SECRET.encode(), header, body)
        assert json.loads(body)["id"] == budget["id"]


async def _secret(reference: str) -> bytes:
    assert reference == REF
    return SECRET.encode()


async def _pending(endpoint: str, table: TableView) -> list[int]:
    """The failed attempts of each alert that waits for a retry, due or not."""
    options = client_kwargs(endpoint)
    session = aioboto3.Session(
        aws_access_key_id=options["aws_access_key_id"],
        aws_secret_access_key=options["aws_secret_access_key"],
    )
    client = await open_client(session, options["region_name"], endpoint)
    try:
        store = DynamoStore(client, table.name, table.schema, random.Random(0))
        return [a.attempts for a in await store.pending_alerts(1e15)]
    finally:
        await client.close()


async def _sweep(
    endpoint: str, table: TableView, alerts: dict[str, str], now: float
) -> tuple[int, int]:
    """Run the retry sweep at ``now``: (delivered, still pending after it)."""
    options = client_kwargs(endpoint)
    session = aioboto3.Session(
        aws_access_key_id=options["aws_access_key_id"],
        aws_secret_access_key=options["aws_secret_access_key"],
    )
    client = await open_client(session, options["region_name"], endpoint)
    try:
        store = DynamoStore(client, table.name, table.schema, random.Random(0))
        settings = (AlertSettings(**alerts), EgressSettings(allow=LOOPBACK))
        notifier = AlertNotifier(store, lambda: settings, _secret, lambda: now)
        delivered = await notifier.sweep(now)
        return delivered, len(await store.pending_alerts(1e15))
    finally:
        await client.close()
