"""Budget alerts against the real embedded DynamoDB and a real webhook receiver on loopback."""

from __future__ import annotations

import asyncio
import json
import random
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from aiohttp import web

from edgeproxy.config.alerts import AlertSettings
from edgeproxy.config.egress import EgressSettings
from edgeproxy.routing.alerts import RETRY_BASE_S, Alert
from edgeproxy.service.alerts.notifier import AlertNotifier
from edgeproxy.service.alerts.signature import HEADER, verify
from edgeproxy.service.alerts.watcher import KeyBudgetAlerts
from edgeproxy.state.dynamodb.dynamo import DynamoStore

SECRET = b"hook-secret"
LOOPBACK = EgressSettings(allow=["127.0.0.0/8"])


@dataclass
class Receiver:
    """A webhook on loopback that records what it got and fails the first ``fail`` posts."""

    fail: int = 0
    got: list[tuple[bytes, str]] = field(default_factory=list)
    url: str = ""

    async def handle(self, request: web.Request) -> web.Response:
        body = await request.read()
        if self.fail > 0:
            self.fail -= 1
            return web.Response(status=503)
        self.got.append((body, request.headers.get(HEADER, "")))
        return web.Response(status=204)


@pytest.fixture
async def receiver() -> AsyncIterator[Receiver]:
    rec = Receiver()
    app = web.Application()
    app.router.add_post("/hook", rec.handle)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    rec.url = f"http://127.0.0.1:{port}/hook"
    yield rec
    await runner.cleanup()


def _notifier(store: DynamoStore, url: str, clock: list[float]) -> AlertNotifier:
    async def secret(ref: str) -> bytes:
        assert ref == "env:EDGEPROXY_CRED_HOOK"
        return SECRET

    settings = AlertSettings(webhook_url=url, webhook_secret_ref="env:EDGEPROXY_CRED_HOOK")
    return AlertNotifier(store, lambda: (settings, LOOPBACK), secret, lambda: clock[0])


async def test_a_concurrent_burst_over_two_stores_alerts_once_per_threshold(
    dynamo_client: Any, table_name: str, table_schema: Any, receiver: Receiver
) -> None:
    # Two stores (as two processes) reserve and settle one key's spend at once; the
    # alerts ride those writes (KeyBudgetAlerts), nothing else calls the notifier.
    clock = [1000.0]
    stores = [
        DynamoStore(dynamo_client, table_name, table_schema, random.Random(s)) for s in (1, 2)
    ]
    watchers = []
    for store in stores:
        watchers.append(KeyBudgetAlerts(_notifier(store, receiver.url, clock)))
        store.spend_watcher = watchers[-1]
    account = "0123456789abcdef@2026-12-01"

    async def request(i: int) -> bool:
        store = stores[i % 2]
        if not await store.reserve_key_spend(account, 10, 0.5, 10.0):
            return False
        await store.record_key_usage(account, None, 0, 0.5, 1e9)  # actual 1.0, estimate 0.5
        return True

    admitted = await asyncio.gather(*(request(i) for i in range(30)))
    for watcher in watchers:
        await watcher.aclose()

    assert not all(admitted)  # the budget held: at least one refused, so spend >= 10
    bodies = [json.loads(body) for body, _ in receiver.got]
    assert sorted(b["threshold"] for b in bodies) == [0.8, 1.0]
    assert {(b["level"], b["id"], b["period"]) for b in bodies} == {
        ("key", "0123456789abcdef", "2026-12-01")
    }
    assert all(verify(SECRET, header, body) for body, header in receiver.got)
    assert not verify(b"other", receiver.got[0][1], receiver.got[0][0])
    assert await stores[0].pending_alerts(1e12) == []


async def _settle(notifier: AlertNotifier, before: float, after: float) -> list[Alert]:
    """Key ``k1``'s spend moved ``before`` -> ``after`` over a 10 USD total budget: claimed,
    then delivered, as ``KeyBudgetAlerts`` does (here in the test's task)."""
    won = await notifier.claim("key", "k1", None, 10.0, None, before, after)
    await notifier.deliver(won)
    return won


async def test_a_failed_delivery_is_sent_again_by_the_sweep(
    store: DynamoStore, receiver: Receiver
) -> None:
    receiver.fail = 2
    clock = [1000.0]
    notifier = _notifier(store, receiver.url, clock)
    won = await _settle(notifier, 9.0, 10.0)
    assert [a.threshold for a in won] == [1.0]
    assert receiver.got == []
    # Not due yet: the backoff holds it.
    assert await notifier.sweep(1000.0 + RETRY_BASE_S / 2) == 0
    assert await notifier.sweep(1000.0 + RETRY_BASE_S) == 0  # fails again (second 503)
    (pending,) = await store.pending_alerts(1e12)
    assert pending.attempts == 2
    assert await notifier.sweep(1000.0 + 10 * RETRY_BASE_S) == 1
    assert len(receiver.got) == 1
    assert verify(SECRET, receiver.got[0][1], receiver.got[0][0])
    assert await store.pending_alerts(1e12) == []
    # Claimed once for good: a later settlement over the same threshold sends nothing.
    assert await _settle(notifier, 9.5, 10.5) == []


async def test_a_key_whose_budget_was_removed_stops_alerting(
    store: DynamoStore, receiver: Receiver
) -> None:
    clock = [1000.0]
    watcher = KeyBudgetAlerts(_notifier(store, receiver.url, clock))
    store.spend_watcher = watcher
    assert await store.reserve_key_spend("k2", 1, 5.0, 10.0)  # the budget rides the spend item
    assert await store.reserve_key_spend("k2", 1, 1.0, None)  # removed: no budget any more
    await store.record_key_usage("k2", None, 0, 20.0, 1e9)  # far past the old budget
    await watcher.aclose()
    assert receiver.got == []
    assert await store.pending_alerts(1e12) == []
