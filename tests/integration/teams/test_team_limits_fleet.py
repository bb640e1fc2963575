"""A team's, an organization's and an end user's limits hold under 64 concurrent callers on
two gateway processes sharing one table, and a dead process's in-flight slots lapse.

Prices are $1 a token, so spend moves with every answer. Every mock answer uses fewer
tokens than its estimate (``max_tokens`` bounds the output), so the bound of
``docs/teams.md`` is 0 here: the admitted totals stay within each limit exactly, and at
least one request of each burst is refused, naming the level.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from edgeproxy.config.loader import parse_config
from edgeproxy.config.policies import Operation
from edgeproxy.routing.deadlines import Budget
from edgeproxy.routing.judge.levels import end_user_partition
from edgeproxy.service.limits.parallel import GRACE_S
from edgeproxy.state.dynamodb.dynamo_levels import level_spend_key, level_usage_key
from edgeproxy.state.items import get_float, get_int
from edgeproxy_dev.mock_upstream import MockUpstream
from tests.fixtures.clock import FleetClock
from tests.fixtures.configs import config, deployment
from tests.fixtures.table import TableView, wait_for
from tests.integration.keys.helpers import ADMIN_KEY, ENV, HELLO, bearer, create_key

CALLERS = 64
BODY = {"model": "fast-chat", "messages": HELLO, "max_tokens": 20}  # estimate: 10 + 20 tokens
PRICE = 1_000_000.0  # $1 a token, in and out


def _admin(base_url: str, path: str, body: dict[str, Any]) -> None:
    answer = httpx.post(base_url + path, json=body, headers=bearer(ADMIN_KEY), timeout=10)
    assert answer.status_code == 201, answer.text


def _burst(
    urls: list[str], key: str, headers: dict[str, str] | None = None
) -> list[httpx.Response]:
    async def run() -> list[httpx.Response]:
        limits = httpx.Limits(max_connections=CALLERS)
        async with httpx.AsyncClient(timeout=60, limits=limits) as http:
            calls = (
                http.post(
                    urls[i % 2] + "/v1/chat/completions",
                    json=BODY,
                    headers={**bearer(key), **(headers or {})},
                )
                for i in range(CALLERS)
            )
            return list(await asyncio.gather(*calls))

    return asyncio.run(run())


def _tokens(answers: list[httpx.Response]) -> int:
    return sum(a.json()["usage"]["total_tokens"] for a in answers if a.status_code == 200)


def _cfg(upstream: MockUpstream) -> dict[str, Any]:
    return config(
        deployment("a", upstream, input_price_per_mtok=PRICE, output_price_per_mtok=PRICE)
    )


@pytest.fixture
def fleet(
    spawn_gateway: Callable[..., Any],
    start_gateway: Callable[..., Any],
    clock: FleetClock,
    upstream_a: MockUpstream,
) -> tuple[Any, Any]:
    """Two gateway processes (remote, local) on one table, early in a minute."""
    cfg = _cfg(upstream_a)
    remote, local = spawn_gateway(cfg, env=ENV), start_gateway(cfg, env=ENV)
    into = clock.now() % 60
    if into > 20:
        clock.advance(60 - into + 1)
    return remote, local


def _member(local: Any, org: dict[str, Any], team: dict[str, Any]) -> dict[str, Any]:
    _admin(local.base_url, "/admin/organizations", {"name": org["id"], **org})
    _admin(
        local.base_url,
        "/admin/teams",
        {"name": team["id"], "organization_id": org["id"], **team},
    )
    return create_key(local.base_url, name=f"in-{team['id']}", team_id=team["id"])


def _spent(table: TableView, account: str, served: list[httpx.Response]) -> float:
    cost = float(_tokens(served))  # $1 a token
    return wait_for(
        lambda: get_float(table.item(level_spend_key(account)), "spend_usd"),
        lambda s: abs(s - cost) < 1e-6,
        f"{account}'s spend settled",
    )


@pytest.mark.parametrize(
    ("level", "org", "team", "headers", "account"),
    [
        ("team", {"id": "o1"}, {"id": "t1", "budget_usd": 100}, None, "team:t1"),
        ("organization", {"id": "o2", "budget_usd": 100}, {"id": "t2"}, None, "organization:o2"),
        (
            "end_user",
            {"id": "o3"},
            {"id": "t3", "end_user_limits": {"budget_usd": 100}},
            {"x-edgeproxy-end-user": "alice"},
            end_user_partition("team:t3", "alice"),
        ),
    ],
)
def test_a_budget_at_each_level_holds_under_64_callers_on_two_processes(
    fleet: tuple[Any, Any],
    table: TableView,
    level: str,
    org: dict[str, Any],
    team: dict[str, Any],
    headers: dict[str, str] | None,
    account: str,
) -> None:
    remote, local = fleet
    key = _member(local, org, team)
    answers = _burst([remote.base_url, local.base_url], key["key"], headers)
    assert {a.status_code for a in answers} <= {200, 429}
    served = [a for a in answers if a.status_code == 200]
    refused = [a for a in answers if a.status_code == 429]
    assert 1 <= len(served) < CALLERS
    assert _tokens(served) * 1.0 <= 100.0  # $1 a token: admitted spend within the budget
    for answer in refused:
        error = answer.json()["error"]
        assert error["code"] == "insufficient_quota"
        assert f"level {level}" in error["message"]
    # Settled: the level's spend is the served answers' cost, exactly.
    assert _spent(table, account, served) <= 100.0
    if level == "end_user":  # another end user of the same team has a budget of its own
        other = _burst(
            [remote.base_url, local.base_url], key["key"], {"x-edgeproxy-end-user": "bob"}
        )
        assert 200 in {a.status_code for a in other}


def test_a_team_tpm_limit_holds_under_64_callers_on_two_processes(
    fleet: tuple[Any, Any], clock: FleetClock, table: TableView
) -> None:
    remote, local = fleet
    key = _member(local, {"id": "o4"}, {"id": "t4", "tpm_limit": 100})
    answers = _burst([remote.base_url, local.base_url], key["key"])
    assert {a.status_code for a in answers} <= {200, 429}
    served = [a for a in answers if a.status_code == 200]
    assert 1 <= len(served) < CALLERS
    assert _tokens(served) <= 100
    refused = [a.json()["error"] for a in answers if a.status_code == 429]
    assert all(e["code"] == "rate_limit_exceeded" for e in refused)
    assert all(
        "level team" in e["message"] and "tokens per minute" in e["message"] for e in refused
    )
    total = _tokens(served)
    bucket = level_usage_key("team:t4", int(clock.now() // 60))
    wait_for(lambda: get_int(table.item(bucket), "tokens"), lambda t: t == total, "tokens settled")


def test_a_sharded_teams_rpm_and_tpm_hold_under_64_callers_on_two_processes(
    fleet: tuple[Any, Any], clock: FleetClock, table: TableView
) -> None:
    """``counter_shards: 4``: the shares sum to the limit, so the fleet admits exactly the
    rpm limit (borrowing ends only when all four are full) and never more than the tpm."""
    remote, local = fleet
    urls = [remote.base_url, local.base_url]
    shards = 4
    key = _member(local, {"id": "o6"}, {"id": "t6", "rpm_limit": 20, "counter_shards": shards})
    answers = _burst(urls, key["key"])
    assert sorted({a.status_code for a in answers}) == [200, 429]
    assert sum(a.status_code == 200 for a in answers) == 20  # exactly the limit, fleet-wide
    refused = [a.json()["error"]["message"] for a in answers if a.status_code == 429]
    assert all("level team" in m and "requests per minute" in m for m in refused)
    minute = int(clock.now() // 60)
    per_shard = [
        get_int(table.item(level_usage_key("team:t6", minute, s)), "requests")
        for s in range(shards)
    ]
    assert per_shard == [5, 5, 5, 5]  # every shard used, each to its share

    tpm = 200
    key = _member(local, {"id": "o7"}, {"id": "t7", "tpm_limit": tpm, "counter_shards": shards})
    answers = _burst(urls, key["key"])
    assert sorted({a.status_code for a in answers}) == [200, 429]
    served = [a for a in answers if a.status_code == 200]
    total = _tokens(served)
    assert total <= tpm
    refused = [a.json()["error"]["message"] for a in answers if a.status_code == 429]
    assert all("level team" in m and "tokens per minute" in m for m in refused)

    def summed() -> int:
        return sum(
            get_int(table.item(level_usage_key("team:t7", minute, s)), "tokens")
            for s in range(shards)
        )

    wait_for(summed, lambda t: t == total, "the shards' tokens settled to the served total")
    shown = httpx.get(
        local.base_url + "/admin/teams/t7", headers=bearer(ADMIN_KEY), timeout=10
    ).json()
    assert shown["counter_shards"] == shards


def test_a_team_max_parallel_holds_under_64_callers_on_two_processes(
    fleet: tuple[Any, Any], upstream_a: MockUpstream
) -> None:
    remote, local = fleet
    key = _member(local, {"id": "o5"}, {"id": "t5", "max_parallel_requests": 2})
    upstream_a.set_faults([], persistent={"latency_ms": 3000})  # the burst overlaps
    answers = _burst([remote.base_url, local.base_url], key["key"])
    statuses = sorted(a.status_code for a in answers)
    assert set(statuses) <= {200, 429}
    assert 1 <= statuses.count(200) < CALLERS
    assert upstream_a.peak_concurrency <= 2  # on both processes together, never more
    refused = [a for a in answers if a.status_code == 429]
    for answer in refused:
        message = answer.json()["error"]["message"]
        assert "level team" in message
        assert "max_parallel_requests: 2" in message
        assert float(answer.headers["retry-after"]) >= 1


def _lease_s(upstream: MockUpstream) -> float:
    """The stated lease of a slot (``docs/teams.md``): the chat JSON request's total deadline
    plus ``GRACE_S``."""
    parsed = parse_config(_cfg(upstream), "test", entry=False)
    deadline = parsed.router.execution_policies[Operation.CHAT].json_
    return Budget.from_deadline(deadline, 0.0, None).total_ms / 1000.0 + GRACE_S


def test_a_killed_processs_slots_lapse_within_the_lease(
    fleet: tuple[Any, Any], clock: FleetClock, upstream_a: MockUpstream
) -> None:
    remote, local = fleet
    key = _member(local, {"id": "o6"}, {"id": "t6", "max_parallel_requests": 2})
    upstream_a.set_faults([], persistent={"latency_ms": 20_000})

    def hold() -> None:
        with contextlib.suppress(httpx.HTTPError):  # its process is killed under it
            httpx.post(
                remote.base_url + "/v1/chat/completions",
                json=BODY,
                headers=bearer(key["key"]),
                timeout=30,
            )

    holders = [threading.Thread(target=hold, daemon=True) for _ in range(2)]
    for thread in holders:
        thread.start()
    wait_for(lambda: len(upstream_a.requests()), lambda n: n >= 2, "two requests in flight")
    full = httpx.post(
        local.base_url + "/v1/chat/completions", json=BODY, headers=bearer(key["key"]), timeout=30
    )
    assert full.status_code == 429
    assert "level team" in full.json()["error"]["message"]

    remote.process.kill()  # mid-request: its slots are never freed by a release
    remote.process.wait()
    clock.drop_follower(remote.base_url)
    upstream_a.set_faults([], persistent={"latency_ms": 0})
    lease = _lease_s(upstream_a)
    clock.advance(lease)  # the holders' leases began a moment before the clock's now
    freed = wait_for(
        lambda: (
            httpx.post(
                local.base_url + "/v1/chat/completions",
                json=BODY,
                headers=bearer(key["key"]),
                timeout=30,
            ).status_code
        ),
        lambda s: s == 200,
        "the team's slots freed within the lease",
    )
    assert freed == 200
    for thread in holders:
        thread.join(timeout=30)
