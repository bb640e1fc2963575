"""Silent routes are left at once, per-deployment overrides bound retries, gateway faults are neutral."""

from __future__ import annotations

import math
import time

import httpx

from edgeproxy.routing.snapshot import CircuitState
from edgeproxy_dev.mock_upstream import MockUpstream
from tests.fixtures.clock import FleetClock
from tests.fixtures.configs import config, deployment
from tests.fixtures.gateway import AUTH_REQUIRED
from tests.fixtures.sse import sse_events, stream_text
from tests.fixtures.table import TableView
from tests.integration.resilience.helpers import (
    CLIENT_KEY,
    keys,
    model_requests,
    post_chat,
    router,
)

SLACK_S = 2.0  # the upstream call counts are the proof; times are coarse for load


def warm(gw) -> None:
    """Build the gateway and read its configuration before timing anything."""
    httpx.get(gw.base_url + "/v1/models", headers={"authorization": f"Bearer {CLIENT_KEY}"})


def test_a_silent_deployment_is_tried_once_and_the_fallback_answers(
    failover_gateway, upstream_a: MockUpstream, upstream_b: MockUpstream
) -> None:
    gw = failover_gateway(
        router=router(json={"response_ms": 800, "max_attempts": 3}),
        gateway=keys(),
    )
    upstream_a.set_faults([], persistent={"stall": True})
    warm(gw)
    for _ in range(2):
        started = time.monotonic()
        answer = post_chat(gw.base_url, "fast-chat")
        elapsed = time.monotonic() - started
        assert answer.status_code == 200
        assert answer.json()["choices"][0]["message"]["content"].startswith("Hello from b")
        assert elapsed < 0.8 + SLACK_S
    assert len(model_requests(upstream_a)) == 2  # once per request, never retried within one


def test_a_stream_that_goes_idle_before_commit_moves_on_at_once(
    failover_gateway, upstream_a: MockUpstream, upstream_b: MockUpstream
) -> None:
    gw = failover_gateway(
        router=router(stream={"idle_ms": 500, "max_attempts": 3}),
        gateway=keys(),
    )
    upstream_a.set_faults([], persistent={"stall_after_chunks": 1})
    warm(gw)
    started = time.monotonic()
    answer = post_chat(gw.base_url, "fast-chat", stream=True)
    assert stream_text(sse_events(answer)).startswith("Hello from b")
    assert time.monotonic() - started < 0.5 + SLACK_S
    assert len(model_requests(upstream_a)) == 1


def test_a_deployment_with_max_attempts_1_is_called_once(
    start_gateway, upstream_a: MockUpstream
) -> None:
    override = {"chat": {"json": {"max_attempts": 1}}}
    gw = start_gateway(
        config(
            deployment("a", upstream_a, execution_policy_overrides=override),
            router=router(json={"max_attempts": 3}),
            gateway=keys(),
        )
    )
    upstream_a.set_faults([], persistent={"status": 503})
    warm(gw)
    started = time.monotonic()
    answer = post_chat(gw.base_url, "fast-chat")
    assert answer.status_code == 503
    assert len(model_requests(upstream_a)) == 1
    assert time.monotonic() - started < 2.5  # no backoff, no second or third call (coarse)


def test_a_credential_fetch_failure_leaves_the_shared_circuit_closed(
    start_gateway, upstream_a: MockUpstream, upstream_b: MockUpstream, table: TableView
) -> None:
    missing = {"credential": "env:EDGEPROXY_CRED_TEST_NEVER_SET"}
    gw = start_gateway(
        config(
            deployment("a", upstream_a, priority=1, **missing),
            deployment("b", upstream_b),
            # Any counted failure would open a's circuit at once.
            router=router(circuit={"allowed_fails": 0}),
            gateway=keys(),
        )
    )
    for _ in range(3):
        answer = post_chat(gw.base_url, "fast-chat")
        assert answer.status_code == 200
        assert answer.json()["choices"][0]["message"]["content"].startswith("Hello from b")
    table.wait_successes(3, "b")
    assert table.circuit("a").state is CircuitState.CLOSED
    assert table.circuit("a").failures == 0
    assert table.usage_total("a", "failures") == 0
    assert model_requests(upstream_a) == []


def test_a_credential_fetch_failure_alone_says_the_gateway_failed(
    start_gateway, upstream_a: MockUpstream
) -> None:
    gw = start_gateway(
        config(
            deployment("a", upstream_a, credential="env:EDGEPROXY_CRED_TEST_NEVER_SET"),
            router=router(),
            gateway=keys(),
        )
    )
    answer = post_chat(gw.base_url, "fast-chat")
    assert answer.status_code == 500
    error = answer.json()["error"]
    assert error["code"] == "credential_unavailable"
    assert answer.headers["x-should-retry"] == "false"
    assert "gateway" in error["message"]
    assert "EDGEPROXY_TEST_NEVER_SET" not in error["message"]  # names the deployment only
    assert answer.headers["x-request-id"]


def test_an_upstream_rejecting_the_gateways_key_says_whose_key_it_was(
    start_gateway, make_upstream
) -> None:
    locked = make_upstream("locked", api_key="sk-not-the-gateways")
    gw = start_gateway(config(deployment("a", locked), router=router(), gateway=keys()))
    answer = post_chat(gw.base_url, "fast-chat")
    assert answer.status_code == 401  # 000's status
    error = answer.json()["error"]
    assert error["code"] == "upstream_credential_rejected"
    assert "gateway's upstream credential" in error["message"]
    assert "`a`" in error["message"]
    assert answer.headers["x-should-retry"] == "false"


def test_errors_name_the_request_and_say_when_a_retry_is_pointless(
    start_gateway, upstream_a: MockUpstream
) -> None:
    gw = start_gateway(
        config(deployment("a", upstream_a), router=router(), gateway=keys()), env=AUTH_REQUIRED
    )
    unknown = post_chat(gw.base_url, "no-such-model")
    assert unknown.status_code == 404
    assert unknown.headers["x-should-retry"] == "false"
    assert unknown.headers["x-request-id"]
    named = httpx.post(
        gw.base_url + "/v1/chat/completions",
        json={"model": "no-such-model", "messages": []},
        headers={"authorization": f"Bearer {CLIENT_KEY}", "x-request-id": "req-42"},
    )
    assert named.headers["x-request-id"] == "req-42"
    unauthenticated = httpx.post(gw.base_url + "/v1/chat/completions", json={})
    assert unauthenticated.status_code == 401
    assert unauthenticated.headers["x-request-id"]
    assert httpx.get(gw.base_url + "/nowhere").headers["x-request-id"]
    assert httpx.get(gw.base_url + "/health").headers["x-request-id"]
    upstream_a.set_faults([{"status": 503}], persistent={"status": 503})
    overloaded = post_chat(gw.base_url, "fast-chat")
    assert overloaded.status_code == 503
    assert "x-should-retry" not in overloaded.headers  # a transient failure may pass


def test_an_rpm_refusal_says_when_the_next_minute_starts(
    start_gateway, upstream_a: MockUpstream, clock: FleetClock
) -> None:
    gw = start_gateway(
        config(deployment("a", upstream_a, rpm_limit=1), router=router(), gateway=keys())
    )
    clock.advance(60 - clock.now() % 60 + 1)  # both requests fall in one minute bucket
    assert post_chat(gw.base_url, "fast-chat").status_code == 200
    refused = post_chat(gw.base_url, "fast-chat")
    now = clock.now()
    assert refused.status_code == 429
    expected = math.ceil(60 - now % 60)
    assert abs(int(refused.headers["retry-after"]) - expected) <= 1
