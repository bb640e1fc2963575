"""Client keys across two gateway processes sharing one table.

A revocation reaches the other process within the key cache TTL (moved past
with the fleet clock, not slept through); a key's rpm limit holds exactly
when 64 callers hit both processes at once.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import httpx

from edgeproxy_dev.mock_upstream import MockUpstream
from tests.fixtures.clock import FleetClock
from tests.fixtures.configs import config, deployment
from tests.integration.keys.helpers import ENV, HELLO, bearer, chat, create_key, revoke_key

KEY_TTL_S = 10.0
FLEET_ENV = {**ENV, "EDGEPROXY_KEY_CACHE_TTL_SECONDS": str(KEY_TTL_S)}


def _fleet(spawn_gateway: Callable[..., Any], start_gateway: Callable[..., Any], cfg: Any) -> Any:
    remote = spawn_gateway(cfg, env=FLEET_ENV)
    local = start_gateway(cfg, env=FLEET_ENV)
    return remote, local


def test_a_revocation_reaches_the_other_process_within_the_key_ttl(
    spawn_gateway: Callable[..., Any],
    start_gateway: Callable[..., Any],
    clock: FleetClock,
    upstream_a: MockUpstream,
) -> None:
    remote, local = _fleet(spawn_gateway, start_gateway, config(deployment("a", upstream_a)))
    created = create_key(local.base_url, name="soon-revoked")
    key = created["key"]
    assert chat(remote.base_url, key).status_code == 200  # the remote caches the key now
    assert revoke_key(local.base_url, created["id"]).json()["revoked"] is True
    assert chat(local.base_url, key).status_code == 401  # at once where it was revoked
    clock.advance(KEY_TTL_S / 2)
    assert chat(remote.base_url, key).status_code == 200  # still within the TTL there
    clock.advance(KEY_TTL_S / 2 + 0.1)
    for base_url in (remote.base_url, local.base_url):
        refused = chat(base_url, key)
        assert refused.status_code == 401
        assert refused.json()["error"]["message"] == "This API key has been revoked."


def test_a_keys_rpm_limit_holds_exactly_under_64_concurrent_callers_on_two_processes(
    spawn_gateway: Callable[..., Any],
    start_gateway: Callable[..., Any],
    clock: FleetClock,
    upstream_a: MockUpstream,
) -> None:
    remote, local = _fleet(spawn_gateway, start_gateway, config(deployment("a", upstream_a)))
    key = create_key(local.base_url, rpm_limit=20)["key"]
    into = clock.now() % 60
    if into > 30:  # keep the burst inside one minute bucket
        clock.advance(60 - into + 1)
    for base_url in (remote.base_url, local.base_url):  # both know the key (cached)
        assert httpx.get(base_url + "/v1/models", headers=bearer(key)).status_code == 200
    upstream_a.clear()

    async def burst() -> list[httpx.Response]:
        limits = httpx.Limits(max_connections=64)
        async with httpx.AsyncClient(timeout=30, limits=limits) as http:
            urls = [remote.base_url, local.base_url]
            return list(
                await asyncio.gather(
                    *(
                        http.post(
                            urls[i % 2] + "/v1/chat/completions",
                            json={"model": "fast-chat", "messages": HELLO},
                            headers=bearer(key),
                        )
                        for i in range(64)
                    )
                )
            )

    answers = asyncio.run(burst())
    statuses = [a.status_code for a in answers]
    assert statuses.count(200) == 20
    assert statuses.count(429) == 44
    assert len([r for r in upstream_a.requests() if r["path"] == "/v1/chat/completions"]) == 20
    assert all(int(a.headers["retry-after"]) >= 1 for a in answers if a.status_code == 429)
