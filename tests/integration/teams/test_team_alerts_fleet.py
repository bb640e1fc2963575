"""A team's and an organization's budget alerts over two gateway processes: one signed
notification per threshold per period, and a failed post delivered by the retry sweep.

64 callers on two processes spend a team's $100 budget (alerting at 80%) inside an
organization whose $150 budget alerts at 50%. Every settlement on either process hands
the level's settled spend to its watcher, and the team's refusals say its budget is
spent; the conditional write of each threshold's alert item decides who posts. The
receiver on loopback refuses the first post, which reaches it only through the sweep,
driven with a later clock rather than a sleep.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest

from edgeproxy.routing.alerts import RETRY_CAP_S
from edgeproxy.service.alerts.signature import verify
from edgeproxy_dev.mock_upstream import MockUpstream
from tests.fixtures.clock import FleetClock
from tests.fixtures.configs import config, deployment
from tests.fixtures.table import TableView, wait_for
from tests.integration.keys.helpers import ADMIN_KEY, ENV, bearer, create_key
from tests.integration.keys.test_key_budget_alerts_fleet import REF, SECRET, Receiver, _sweep
from tests.integration.keys.test_key_limits_fleet import PRICE, burst


@pytest.fixture
def hook() -> Iterator[Receiver]:
    server = Receiver()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


def _admin(base_url: str, path: str, body: dict[str, Any]) -> None:
    answer = httpx.post(base_url + path, json=body, headers=bearer(ADMIN_KEY), timeout=10)
    assert answer.status_code == 201, answer.text


def _got(receiver: Receiver) -> list[tuple[str, str, float]]:
    with receiver.lock:
        bodies = [json.loads(body) for body, _ in receiver.got]
    return sorted((b["level"], b["id"], b["threshold"]) for b in bodies)


def test_a_team_and_its_organization_alert_once_per_threshold_over_two_processes(
    spawn_gateway: Callable[..., Any],
    start_gateway: Callable[..., Any],
    clock: FleetClock,
    upstream_a: MockUpstream,
    table: TableView,
    hook: Receiver,
    dynamo_endpoint: str,
) -> None:
    alerts = {"webhook_url": hook.url, "webhook_secret_ref": REF}
    cfg = config(
        deployment("a", upstream_a, input_price_per_mtok=PRICE, output_price_per_mtok=PRICE),
        gateway={"alerts": alerts},
    )
    env = {**ENV, "EDGEPROXY_CRED_ALERT_HOOK": SECRET}
    remote = spawn_gateway(cfg, env=env)
    local = start_gateway(cfg, env=env)
    org = {"id": "acme", "name": "Acme", "budget_usd": 150, "soft_budget_ratio": 0.5}
    _admin(local.base_url, "/admin/organizations", org)
    team = {"id": "search", "name": "Search", "organization_id": "acme", "budget_usd": 100}
    _admin(local.base_url, "/admin/teams", {**team, "soft_budget_ratio": 0.8})
    key = create_key(local.base_url, name="member", team_id="search")
    hook.fail = 1  # the first post (whichever alert it carries) is refused

    answers = burst([remote.base_url, local.base_url], key["key"])
    refused = [a for a in answers if a.status_code != 200]
    assert refused
    assert all("team `search`" in a.json()["error"]["message"] for a in refused)

    # A burst admits what its estimates fit ($30 each); more bursts spend the rest as the
    # answers settle below their estimates.
    for _ in range(8):
        if len(hook.got) + hook.refused == 3:
            break
        burst([remote.base_url, local.base_url], key["key"])
    expected = [("organization", "acme", 0.5), ("team", "search", 0.8), ("team", "search", 1.0)]
    # Two arrive now; the third failed once and waits for the sweep.
    wait_for(lambda: (len(hook.got), hook.refused), lambda n: n == (2, 1), "first posts")
    # Not due yet at the gateways' clock; due once the clock passes the backoff.
    assert asyncio.run(_sweep(dynamo_endpoint, table, alerts, clock.now())) == (0, 1)
    assert asyncio.run(_sweep(dynamo_endpoint, table, alerts, clock.now() + RETRY_CAP_S)) == (1, 0)

    assert _got(hook) == expected  # once each, from whichever process claimed it
    for body, header in hook.got:
        assert verify(SECRET.encode(), header, body)
    # Later bursts in the same period alert nothing again.
    for _ in range(2):
        burst([remote.base_url, local.base_url], key["key"])
    assert _got(hook) == expected
    assert hook.refused == 1
