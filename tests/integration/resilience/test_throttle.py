"""Provider 429s: Retry-After honoured, bounded attempts, shared capacity circuits.

The stock SDKs here keep their own retries (two, honouring Retry-After), as a
caller's would: the gateway must not add to them.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable, Iterator
from typing import Any

import anthropic
import httpx
import openai
import pytest

from edgeproxy_dev.mock_upstream import MockUpstream
from tests.fixtures.configs import config, deployment
from tests.integration.resilience.helpers import (
    CLIENT_KEY,
    HELLO,
    deployment_status,
    keys,
    model_requests,
    router,
)

FAST_THROTTLE = {"throttle_cooldown_seconds": 1}
EXACT_THROTTLE = {"throttle_exact_retry_after": True}  # a provider's wait, even below the floor
SDKS = ["openai", "anthropic"]


@pytest.fixture
def stock_sdk() -> Iterator[Callable[[str, str], Callable[[], Any]]]:
    """Factory: (sdk name, gateway URL) -> a call of one chat turn through that stock SDK,
    with the SDK's own default retries left on. The gateway is warmed up first (its
    configuration and key read), so a call's time is the routing's."""
    made: list[openai.OpenAI | anthropic.Anthropic] = []

    def make(name: str, base_url: str) -> Callable[[], Any]:
        warm = httpx.get(
            base_url + "/v1/models", headers={"authorization": f"Bearer {CLIENT_KEY}"}, timeout=30
        )
        assert warm.status_code == 200
        if name == "openai":
            oai = openai.OpenAI(base_url=base_url + "/v1", api_key=CLIENT_KEY, timeout=30)
            made.append(oai)
            return lambda: oai.chat.completions.create(model="fast-chat", messages=HELLO)
        ant = anthropic.Anthropic(base_url=base_url, api_key=CLIENT_KEY, timeout=30)
        made.append(ant)
        return lambda: ant.messages.create(model="fast-chat", max_tokens=64, messages=HELLO)

    yield make
    for each in made:
        each.close()


@pytest.mark.parametrize("sdk_name", SDKS)
def test_one_429_is_retried_after_the_providers_wait_not_the_throttle_cooldown(
    start_gateway, stock_sdk, upstream_a: MockUpstream, sdk_name: str
) -> None:
    # throttle_exact_retry_after: the throttle cooldown (5) does not hold back the provider's 2 s.
    gw = start_gateway(
        config(deployment("a", upstream_a), router=router(circuit=EXACT_THROTTLE), gateway=keys())
    )
    upstream_a.set_faults([{"status": 429, "retry_after": "2"}])
    call = stock_sdk(sdk_name, gw.base_url)
    started = time.monotonic()
    answer = call()
    elapsed = time.monotonic() - started
    text = answer.choices[0].message.content if sdk_name == "openai" else answer.content[0].text
    assert text.startswith("Hello from a!")
    seen = model_requests(upstream_a)
    assert len(seen) == 2  # no hammering: one retry, after the provider's Retry-After
    gap = seen[1]["time"] - seen[0]["time"]
    assert 1.95 <= gap < 4.5, gap  # no sooner than asked, and not the 5 s cooldown
    assert elapsed < 4.8, elapsed  # ~2.1 s (margin for load); the 5 s cooldown made it 5.1 s


def test_a_shorter_retry_after_waits_the_throttle_cooldown_by_default(
    start_gateway, stock_sdk, upstream_a: MockUpstream
) -> None:
    # 000: throttle_cooldown_seconds (5) is the floor of the capacity circuit; a 429's
    # Retry-After: 2 does not shorten it.
    gw = start_gateway(config(deployment("a", upstream_a), router=router(), gateway=keys()))
    upstream_a.set_faults([{"status": 429, "retry_after": "2"}])
    answer = stock_sdk("openai", gw.base_url)()
    assert answer.choices[0].message.content.startswith("Hello from a!")
    seen = model_requests(upstream_a)
    assert len(seen) == 2
    gap = seen[1]["time"] - seen[0]["time"]
    assert 4.95 <= gap < 8.0, gap  # the 5 s floor, not the provider's 2 s


@pytest.mark.parametrize("sdk_name", SDKS)
def test_persistent_429s_end_in_one_answer_the_sdk_does_not_repeat(
    start_gateway, stock_sdk, upstream_a: MockUpstream, sdk_name: str
) -> None:
    gw = start_gateway(
        config(deployment("a", upstream_a), router=router(circuit=EXACT_THROTTLE), gateway=keys())
    )
    upstream_a.set_faults([], persistent={"status": 429, "retry_after": "2"})
    call = stock_sdk(sdk_name, gw.base_url)
    error_type = openai.RateLimitError if sdk_name == "openai" else anthropic.RateLimitError
    started = time.monotonic()
    with pytest.raises(error_type) as caught:
        call()
    elapsed = time.monotonic() - started
    headers = caught.value.response.headers
    assert headers["x-should-retry"] == "false"  # the gateway made the retries already
    assert headers["retry-after"] == "2"  # the wait left after the last 429
    seen = model_requests(upstream_a)
    # max_attempts (3) calls, as the SDK alone would make (1 + its 2 retries), not 3 per
    # SDK attempt: the SDK saw one 429 and did not retry it.
    assert len(seen) == 3
    gaps = [b["time"] - a["time"] for a, b in itertools.pairwise(seen)]
    assert all(1.95 <= g < 4.5 for g in gaps), gaps
    assert elapsed < 9.0, elapsed  # ~4.1 s: two provider waits; 25 s before
    assert len(model_requests(upstream_a)) == 3  # nothing came after the answer


def test_a_gateway_allowed_two_attempts_answers_within_the_providers_wait(
    start_gateway, stock_sdk, upstream_a: MockUpstream
) -> None:
    gw = start_gateway(
        config(
            deployment("a", upstream_a),
            router=router(circuit=EXACT_THROTTLE, json={"max_attempts": 2}),
            gateway=keys(),
        )
    )
    upstream_a.set_faults([], persistent={"status": 429, "retry_after": "2"})
    call = stock_sdk("openai", gw.base_url)
    started = time.monotonic()
    with pytest.raises(openai.RateLimitError) as caught:
        call()
    elapsed = time.monotonic() - started
    assert caught.value.response.headers["x-should-retry"] == "false"
    assert len(model_requests(upstream_a)) == 2
    assert elapsed < 3.9, elapsed  # one provider wait of 2 s, then the answer at once


def test_a_429_the_gateway_could_not_retry_is_left_to_the_sdk(
    start_gateway, upstream_a: MockUpstream
) -> None:
    # One attempt allowed: the gateway repeated nothing, so the SDK's own retry stands
    # (no x-should-retry), told when the capacity circuit closes: the 5 s floor, which the
    # provider's shorter Retry-After: 2 does not shorten (000).
    gw = start_gateway(
        config(deployment("a", upstream_a), router=router(json={"max_attempts": 1}), gateway=keys())
    )
    upstream_a.set_faults([], persistent={"status": 429, "retry_after": "2"})
    answer = httpx.post(
        gw.base_url + "/v1/chat/completions",
        headers={"authorization": f"Bearer {CLIENT_KEY}"},
        json={"model": "fast-chat", "messages": HELLO},
        timeout=30,
    )
    assert answer.status_code == 429
    assert "x-should-retry" not in answer.headers
    assert answer.headers["retry-after"] == "5"
    assert len(model_requests(upstream_a)) == 1


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
