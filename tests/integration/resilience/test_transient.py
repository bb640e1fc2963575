"""Transient failures: 5xx, resets, stalls and slow answers, through the gateway."""

from __future__ import annotations

import time

import httpx
import openai
import pytest

from edgeproxy_dev.mock_upstream import MockUpstream
from tests.fixtures.configs import config, deployment
from tests.fixtures.sse import sse_events, stream_text
from tests.integration.resilience.helpers import (
    CLIENT_KEY,
    HELLO,
    client,
    keys,
    model_requests,
    post_chat,
    router,
)


def _text(answer: httpx.Response, stream: bool) -> str:
    if stream:
        return stream_text(sse_events(answer))
    return str(answer.json()["choices"][0]["message"]["content"])


def test_500_once_is_retried_on_the_same_deployment(
    start_gateway, upstream_a: MockUpstream
) -> None:
    gw = start_gateway(config(deployment("a", upstream_a), router=router(), gateway=keys()))
    upstream_a.set_faults([{"status": 500}])
    answer = post_chat(gw.base_url, "fast-chat", metadata=True)
    assert answer.status_code == 200
    body = answer.json()
    assert body["choices"][0]["message"]["content"].startswith("Hello from a!")
    first, second = model_requests(upstream_a)
    assert second["time"] - first["time"] >= 0.45  # the backoff before asking it again
    attempts = body["unified_routing"]["attempts"]
    assert [(a["status"], a["error_class"]) for a in attempts] == [
        (500, "transient"),
        (200, None),
    ]


def test_503_persistent_fails_over_within_budget(
    failover_gateway, sdk, upstream_a: MockUpstream, upstream_b: MockUpstream
) -> None:
    gw = failover_gateway(
        router=router(),
        gateway=keys(),
    )
    upstream_a.set_faults([], persistent={"status": 503})
    answer = sdk(gw.base_url).chat.completions.create(model="fast-chat", messages=HELLO)
    assert answer.choices[0].message.content.startswith("Hello from b!")
    assert len(model_requests(upstream_a)) == 1
    assert len(model_requests(upstream_b)) == 1
    # An untried deployment is used at once: b was asked before the 0.5 s backoff a retry
    # of a would have waited (0.45 s at least, see the first test; timestamps of the mocks).
    (asked_a,), (asked_b,) = model_requests(upstream_a), model_requests(upstream_b)
    assert asked_b["time"] - asked_a["time"] < 0.45


def test_connection_reset_before_headers_fails_over(
    failover_gateway, sdk, upstream_a: MockUpstream, upstream_b: MockUpstream
) -> None:
    gw = failover_gateway(
        router=router(),
        gateway=keys(),
    )
    upstream_a.set_faults([], persistent={"reset": True})
    for stream in (False, True):
        answer = post_chat(gw.base_url, "fast-chat", stream=stream, metadata=True)
        assert answer.status_code == 200
        assert "Hello from b!" in _text(answer, stream)
        # a was tried first each time and reset (the mock may reset before it logs a request)
        assert '"deployment":"a"' in answer.text.replace(" ", "")
        assert '"error_kind":"reset"' in answer.text.replace(" ", "")


def test_a_silent_route_is_tried_once_then_504(start_gateway, upstream_a: MockUpstream) -> None:
    gw = start_gateway(
        config(
            deployment("a", upstream_a),
            router=router(json={"response_ms": 1000, "max_attempts": 2, "total_ms": 8000}),
            gateway=keys(),
        )
    )
    upstream_a.set_faults([], persistent={"stall": True})
    httpx.get(gw.base_url + "/v1/models", headers={"authorization": f"Bearer {CLIENT_KEY}"})
    started = time.monotonic()
    answer = post_chat(gw.base_url, "fast-chat")
    elapsed = time.monotonic() - started
    assert answer.status_code == 504
    assert answer.json()["error"]["code"] == "timeout"
    assert answer.headers["x-should-retry"] == "false"  # the gateway already tried
    # A route that went silent is left at once: no backoff and second 1 s wait on it
    # (max_attempts 2 would otherwise allow one: 1 + 0.5 + 1 s). The deadline is 1 s, not
    # less, so that a loaded machine's mock has read the request before it passes.
    assert len(model_requests(upstream_a)) == 1
    assert elapsed >= 1.0  # the count above is the proof; the bound below is coarse for load
    assert elapsed < 4.0
    deadline = time.monotonic() + 2
    while upstream_a.open_connections and time.monotonic() < deadline:
        time.sleep(0.05)
    assert upstream_a.open_connections == 0  # the expired deadline aborted the upstream call


def test_total_ms_bounds_the_whole_request(
    failover_gateway, upstream_a: MockUpstream, upstream_b: MockUpstream
) -> None:
    gw = failover_gateway(
        router=router(json={"response_ms": 3000, "total_ms": 4000, "max_attempts": 3}),
        gateway=keys(),
    )
    # Warm the gateway first: its clients are built on the first request, and that
    # cold start must not be charged to the budget this test measures.
    assert post_chat(gw.base_url, "fast-chat").status_code == 200
    upstream_a.set_faults([], persistent={"stall": True})
    upstream_b.set_faults([], persistent={"stall": True})
    started = time.monotonic()
    answer = post_chat(gw.base_url, "fast-chat")
    elapsed = time.monotonic() - started
    assert answer.status_code == 504
    # b got only the 1 s left of the 4 s budget: unbounded, a and b would
    # take 3 s each (6 s), and a third attempt 9 s. The 1.9 s margin absorbs load.
    assert 3.95 <= elapsed < 5.9
    # One stalled attempt each (the warm-up was answered by a, the preferred tier).
    assert len(model_requests(upstream_a)) == 2
    assert len(model_requests(upstream_b)) == 1


def test_stall_fails_over_to_a_healthy_deployment(
    failover_gateway, upstream_a: MockUpstream, upstream_b: MockUpstream
) -> None:
    gw = failover_gateway(
        router=router(json={"response_ms": 500}, stream={"response_ms": 500, "idle_ms": 500}),
        gateway=keys(),
    )
    upstream_a.set_faults([], persistent={"stall": True})
    for stream in (False, True):
        started = time.monotonic()
        answer = post_chat(gw.base_url, "fast-chat", stream=stream)
        assert answer.status_code == 200
        assert "Hello from b!" in _text(answer, stream)
        assert 0.45 <= time.monotonic() - started < 4.0  # a's 0.5 s, then b (coarse for load)


def test_slow_first_token_within_limits_succeeds(
    start_gateway, sdk, upstream_a: MockUpstream
) -> None:
    gw = start_gateway(
        config(
            deployment("a", upstream_a),
            router=router(json={"response_ms": 6000}, stream={"idle_ms": 700}),
            gateway=keys(),
        )
    )
    # 1.5 s before the first token: within response_ms; over idle_ms for the stream, but
    # the upstream's keepalive bytes flow every 80 ms, and any byte counts (a loaded
    # machine delays one by far less than the 0.7 s idle limit).
    slow = {"first_token_delay_ms": 1500, "keepalive_ms": 80}
    upstream_a.set_faults([slow, slow])
    chat = sdk(gw.base_url).chat.completions
    answer = chat.create(model="fast-chat", messages=HELLO)
    assert answer.choices[0].message.content == "Hello from a! You said: Hello!"
    chunks = list(chat.create(model="fast-chat", messages=HELLO, stream=True))
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == "Hello from a! You said: Hello!"
    assert len(model_requests(upstream_a)) == 2


def test_the_stock_sdk_does_not_repeat_a_gateway_deadline(
    failover_gateway, upstream_a: MockUpstream, upstream_b: MockUpstream
) -> None:
    # The gateway's deadline covered its own attempts and failover; the SDK's default
    # two retries would spend it twice more (82.5 s behind API Gateway's 27 s cap).
    gw = failover_gateway(
        router=router(json={"response_ms": 2000, "total_ms": 6000, "max_attempts": 2}),
        gateway=keys(),
    )
    # Warm the gateway first: its clients are built on the first request, and that
    # cold start must not be charged to the deadline this test runs out.
    assert post_chat(gw.base_url, "fast-chat").status_code == 200
    upstream_a.clear()
    upstream_b.clear()
    upstream_a.set_faults([], persistent={"stall": True})
    upstream_b.set_faults([], persistent={"stall": True})
    with client(gw.base_url, max_retries=2) as sdk:
        assert sdk.max_retries == 2
        with pytest.raises(openai.APIStatusError) as raised:
            sdk.chat.completions.create(model="fast-chat", messages=HELLO)
    assert raised.value.status_code == 504
    assert raised.value.response.headers["x-should-retry"] == "false"
    # One gateway request: one stalled attempt on each deployment, no SDK retry.
    assert len(model_requests(upstream_a)) == 1
    assert len(model_requests(upstream_b)) == 1
