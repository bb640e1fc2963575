"""Provider 429s: Retry-After honoured, bounded attempts, shared capacity circuits."""

from __future__ import annotations

import time

import openai
import pytest

from edgeproxy_dev.mock_upstream import MockUpstream
from tests.fixtures.configs import config, deployment
from tests.integration.resilience.helpers import (
    HELLO,
    deployment_status,
    keys,
    model_requests,
    router,
)

FAST_THROTTLE = {"throttle_cooldown_seconds": 1}


def test_retry_after_is_honoured_on_a_single_deployment(
    start_gateway, sdk, upstream_a: MockUpstream
) -> None:
    gw = start_gateway(
        config(deployment("a", upstream_a), router=router(circuit=FAST_THROTTLE), gateway=keys())
    )
    upstream_a.set_faults([{"status": 429, "retry_after": "2"}])
    started = time.monotonic()
    answer = sdk(gw.base_url).chat.completions.create(model="fast-chat", messages=HELLO)
    elapsed = time.monotonic() - started
    assert answer.choices[0].message.content.startswith("Hello from a!")
    seen = model_requests(upstream_a)
    assert len(seen) == 2  # no hammering: one retry, after the provider's Retry-After
    assert seen[1]["time"] - seen[0]["time"] >= 1.9
    assert elapsed >= 1.9


def test_persistent_429_without_retry_after_is_bounded(
    start_gateway, sdk, upstream_a: MockUpstream
) -> None:
    gw = start_gateway(
        config(
            deployment("a", upstream_a),
            router=router(
                circuit={"throttle_cooldown_seconds": 0, "allowed_fails": 0},
                json={"max_attempts": 3},
            ),
            gateway=keys(),
        )
    )
    message = "Slow down, you are sending too many requests."
    upstream_a.set_faults([], persistent={"status": 429, "error": {"message": message}})
    with pytest.raises(openai.RateLimitError) as caught:
        sdk(gw.base_url).chat.completions.create(model="fast-chat", messages=HELLO)
    assert caught.value.status_code == 429
    assert caught.value.body["message"] == message
    seen = model_requests(upstream_a)
    assert len(seen) == 3  # max_attempts, each retry spaced by the backoff
    assert seen[1]["time"] - seen[0]["time"] >= 0.45
    assert seen[2]["time"] - seen[1]["time"] >= 0.9
    # Throttles are not health failures: even with allowed_fails 0 the circuit stays closed.
    assert deployment_status(gw.base_url, "fast-chat")["a"]["status"] == "available"


def test_capacity_circuit_covers_the_whole_failure_domain(
    start_gateway, sdk, upstream_a: MockUpstream, upstream_b: MockUpstream
) -> None:
    gw = start_gateway(
        config(
            deployment("a", upstream_a, failure_domain="acct-1", priority=1),
            deployment("b", upstream_b, failure_domain="acct-1"),
            router=router(circuit=FAST_THROTTLE),
            gateway=keys(),
        )
    )
    upstream_a.set_faults([], persistent={"status": 429, "retry_after": "1"})
    answer = sdk(gw.base_url).chat.completions.create(model="fast-chat", messages=HELLO)
    assert answer.choices[0].message.content.startswith("Hello from b!")
    [on_a] = model_requests(upstream_a)
    [on_b] = model_requests(upstream_b)
    # b shares a's provider account: it is not asked while that account is throttled.
    assert on_b["time"] - on_a["time"] >= 0.9


def test_throttled_domain_shows_rate_limited(
    start_gateway, sdk, upstream_a: MockUpstream, upstream_b: MockUpstream
) -> None:
    gw = start_gateway(
        config(
            deployment("a", upstream_a, failure_domain="acct-1"),
            deployment("b", upstream_b, failure_domain="acct-1"),
            router=router(circuit={"throttle_cooldown_seconds": 30}, json={"max_attempts": 1}),
            gateway=keys(),
        )
    )
    upstream_a.set_faults([], persistent={"status": 429})
    upstream_b.set_faults([], persistent={"status": 429})
    with pytest.raises(openai.RateLimitError):
        sdk(gw.base_url).chat.completions.create(model="fast-chat", messages=HELLO)
    status = deployment_status(gw.base_url, "fast-chat")
    assert {s["status"] for s in status.values()} == {"rate_limited"}
    assert all(25_000 < s["retry_after_ms"] <= 30_000 for s in status.values())
    # A new request is refused by the shared capacity circuit without asking anyone.
    with pytest.raises(openai.RateLimitError) as caught:
        sdk(gw.base_url).chat.completions.create(model="fast-chat", messages=HELLO)
    assert caught.value.code == "rate_limit_exceeded"
    assert caught.value.response.headers["retry-after"]
    assert len(model_requests(upstream_a)) + len(model_requests(upstream_b)) == 1
