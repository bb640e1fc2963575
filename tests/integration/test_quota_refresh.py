"""The quota refresh against loopback provider endpoints, and routing on what it stored."""

from __future__ import annotations

import asyncio
import hashlib
import random
from typing import Any

import aioboto3
import httpx
import pytest

from edgeproxy.config.loader import parse_config, to_document
from edgeproxy.jobs.quota import QuotaJob, Refreshed
from edgeproxy.routing.snapshot import QuotaStatus, credential_key
from edgeproxy.service.credentials import CredentialResolver
from edgeproxy.state.dynamodb.dynamo import DynamoStore
from edgeproxy.state.store import SnapshotRequest
from edgeproxy_dev.aws import client_kwargs
from edgeproxy_dev.mock_upstream import MockUpstream
from edgeproxy_dev.template import default_template_path, table_schema
from tests.fixtures.clock import FleetClock
from tests.fixtures.configs import config, deployment
from tests.fixtures.table import TableView, wait_for

NOW = 1_800_000_000.0
KEY = credential_key("env:EDGEPROXY_CRED_ACME_KEY")
ENV = {"EDGEPROXY_CRED_ACME_KEY": "sk-acme-quota"}
ADMIN_KEY = "sk-quota-admin"
ADMIN_DIGEST = hashlib.sha256(ADMIN_KEY.encode()).hexdigest()


def source(upstream: MockUpstream, fetcher: str, **params: Any) -> dict[str, Any]:
    defaults: dict[str, dict[str, Any]] = {
        "openrouter-key": {"base_url": upstream.base_url},
        "json": {"url": upstream.base_url + "/quota", "remaining": "data.remaining"},
        "probe": {"base_url": upstream.base_url, "model": "mock-small"},
    }
    return {
        "name": f"acme-{fetcher}",
        "fetcher": fetcher,
        "credential": "env:EDGEPROXY_CRED_ACME_KEY",
        "params": {**defaults[fetcher], **params},
        "timeout_seconds": 1,
    }


async def refresh(
    store: DynamoStore, upstream: MockUpstream, *sources: dict[str, Any]
) -> list[Refreshed]:
    document = to_document(parse_config(config(quota_sources=list(sources)), "test"))
    current = await store.load_config()
    await store.save_config(document, current.version if current else 0)
    async with httpx.AsyncClient() as http:
        job = QuotaJob(store, http, CredentialResolver(ENV), lambda: NOW)
        return await job.run()


async def stored(store: DynamoStore) -> QuotaStatus:
    # As routing reads it: the credential's quota item in the pool's one read.
    read = SnapshotRequest(pool="p", deployment_ids=[], domains=[], minute=0, credentials=[KEY])
    return (await store.read_pool(read)).quotas[KEY]


async def test_an_openrouter_key_endpoint_gives_the_credits_left(
    store: DynamoStore, upstream_a: MockUpstream
) -> None:
    upstream_a.set_faults(
        [{"body": {"data": {"limit": 10.0, "limit_remaining": 2.5, "usage": 7.5}}}]
    )
    (result,) = await refresh(store, upstream_a, source(upstream_a, "openrouter-key"))
    assert result.error is None
    (usd,) = (await stored(store)).quotas
    assert (usd.unit, usd.remaining, usd.limit, usd.source, usd.fetched_at) == (
        "usd",
        2.5,
        10.0,
        "acme-openrouter-key",
        NOW,
    )
    (request,) = [r for r in upstream_a.requests() if r["path"] == "/v1/key"]
    assert request["headers"]["authorization"] == "Bearer sk-acme-quota"


async def test_a_json_endpoint_is_read_through_its_paths(
    store: DynamoStore, upstream_a: MockUpstream
) -> None:
    upstream_a.set_faults([{"body": {"data": {"remaining": 0, "limit": 100, "reset": 120}}}])
    params = {"limit": "data.limit", "reset": "data.reset", "reset_format": "seconds"}
    (result,) = await refresh(store, upstream_a, source(upstream_a, "json", **params))
    assert result.error is None
    (requests,) = (await stored(store)).quotas
    assert (requests.remaining, requests.limit, requests.reset_at) == (0.0, 100.0, NOW + 120)


@pytest.mark.parametrize(
    ("fault", "error"),
    [
        ({"body": {"data": {"remainder": 5}}}, "remaining path 'data.remaining' matched no number"),
        ({"status": 401, "body": {"error": "sk-acme-quota is not valid"}}, "HTTP 401"),
        ({"body": "not an object"}, "matched no number"),
        ({"stall": True}, "timed out"),
    ],
)
async def test_a_failed_fetch_is_recorded_and_keeps_the_last_good_reading(
    store: DynamoStore, upstream_a: MockUpstream, fault: dict[str, Any], error: str
) -> None:
    upstream_a.set_faults([{"body": {"data": {"remaining": 7}}}, fault])
    (first,) = await refresh(store, upstream_a, source(upstream_a, "json"))
    assert first.error is None
    (second,) = await refresh(store, upstream_a, source(upstream_a, "json"))
    assert second.error is not None
    assert error in second.error
    assert "sk-acme-quota" not in second.error
    status = await stored(store)
    assert [q.remaining for q in status.quotas] == [7.0]  # never deleted
    assert status.error == second.error
    assert status.error_at == NOW


async def test_a_probe_reads_the_rate_limit_headers_of_the_cheapest_call(
    store: DynamoStore, upstream_a: MockUpstream
) -> None:
    headers = {
        "x-ratelimit-limit-requests": "500",
        "x-ratelimit-remaining-requests": "0",
        "x-ratelimit-reset-requests": "30s",
        "x-ratelimit-limit-tokens": "10000",
        "x-ratelimit-remaining-tokens": "9000",
        "x-ratelimit-reset-tokens": "1m",
    }
    upstream_a.set_faults([{"status": 429, "headers": headers}])
    (result,) = await refresh(store, upstream_a, source(upstream_a, "probe"))
    assert result.error is None
    quotas = {q.unit: q for q in (await stored(store)).quotas}
    assert (quotas["requests"].remaining, quotas["requests"].reset_at) == (0.0, NOW + 30)
    assert (quotas["tokens"].remaining, quotas["tokens"].limit) == (9000.0, 10000.0)
    (call,) = [r for r in upstream_a.requests() if r["path"] == "/v1/chat/completions"]
    assert call["body"]["max_tokens"] == 1


def run_job(endpoint: str, table: str, now: float) -> list[Refreshed]:
    async def run() -> list[Refreshed]:
        async with aioboto3.Session().client("dynamodb", **client_kwargs(endpoint)) as client:
            store = DynamoStore(
                client, table, table_schema(default_template_path()), random.Random(0)
            )
            async with httpx.AsyncClient() as http:
                return await QuotaJob(store, http, CredentialResolver(ENV), lambda: now).run()

    return asyncio.run(run())


def test_routing_skips_a_spent_credential_and_returns_after_the_reset(
    start_gateway,
    make_upstream,
    monkeypatch: pytest.MonkeyPatch,
    dynamo_endpoint: str,
    gateway_table: str,
    clock: FleetClock,
    upstream_a: MockUpstream,
    table: TableView,
) -> None:
    monkeypatch.setenv("EDGEPROXY_CRED_ACME_KEY", ENV["EDGEPROXY_CRED_ACME_KEY"])
    acme = make_upstream("acme", api_key=ENV["EDGEPROXY_CRED_ACME_KEY"])
    gw = start_gateway(
        config(
            # The preferred tier runs on the ACME credential; "a" is the fallback tier.
            deployment("acme", acme, credential="env:EDGEPROXY_CRED_ACME_KEY", priority=1),
            deployment("a", upstream_a, priority=0),
            quota_sources=[source(acme, "json", reset="data.reset", reset_format="seconds")],
            router={"sticky": {"enabled": False}},
            gateway={"api_keys": [{"name": "ops", "sha256": ADMIN_DIGEST, "admin": True}]},
        )
    )
    auth = {"authorization": f"Bearer {ADMIN_KEY}"}

    def served() -> str:
        answer = httpx.post(
            gw.base_url + "/v1/chat/completions",
            json={"model": "fast-chat", "messages": [{"role": "user", "content": "hi"}]},
            headers=auth,
        )
        assert answer.status_code == 200
        return str(answer.headers["x-edgeproxy-deployment"])

    assert served() == "acme"
    # That answer's rate-limit headers are the credential's first reading (written after it).
    wait_for(lambda: table.quota_source(KEY), lambda s: s == "headers", "the headers' reading")
    acme.set_faults([{"body": {"data": {"remaining": 0, "reset": 120}}}])
    (result,) = run_job(dynamo_endpoint, gateway_table, clock.now())
    assert result.error is None
    assert {served() for _ in range(5)} == {"a"}  # spent: as if the deployment were at a limit
    # The status view names the quota as the blocker.
    view = httpx.get(gw.base_url + "/v1/models/fast-chat/deployments", headers=auth)
    assert view.status_code == 200
    acme_status = next(d for d in view.json()["deployments"] if d["id"] == "acme")
    assert (acme_status["status"], acme_status["limit"]) == ("rate_limited", "quota")
    assert 0 < acme_status["retry_after_ms"] <= 120_000
    clock.advance(121)  # past the reset the provider reported
    assert served() == "acme"
