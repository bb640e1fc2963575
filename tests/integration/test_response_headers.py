"""Upstream rate-limit and timing headers reach the client, in its surface's names."""

from __future__ import annotations

from datetime import UTC, datetime

import anthropic
import openai

from edgeproxy_dev.mock_upstream import MockUpstream
from tests.fixtures.configs import MOCK_KEY, config, deployment
from tests.fixtures.gateway import GatewayServer
from tests.integration.resilience.helpers import router

HELLO = [{"role": "user", "content": "Hello!"}]
TIMING = {"openai-processing-ms": "321"}


def sdk(gateway: GatewayServer) -> openai.OpenAI:
    return openai.OpenAI(base_url=gateway.base_url + "/v1", api_key="sk-caller", max_retries=0)


def test_openai_upstream_headers_reach_the_openai_sdk(start_gateway, upstream_a) -> None:
    gw = start_gateway(config(deployment("a", upstream_a)))
    upstream_a.set_faults([], persistent={"headers": TIMING})
    raw = sdk(gw).chat.completions.with_raw_response.create(
        model="fast-chat", messages=HELLO, extra_headers={"x-request-id": "req-mine-1"}
    )
    assert raw.parse().choices[0].message.content
    headers = raw.headers
    assert headers["x-ratelimit-limit-requests"] == "10000"
    assert headers["x-ratelimit-remaining-tokens"] == "1999999"
    assert headers["x-ratelimit-reset-requests"] == "6ms"
    assert headers["openai-processing-ms"] == "321"
    assert (
        headers["x-request-id"] == "req-mine-1"
    )  # the gateway's id (the client's), not the mock's
    assert "x-mock-upstream" not in headers  # only the named families pass


def test_a_stream_carries_the_committed_attempts_headers(
    failover_gateway, upstream_a: MockUpstream, upstream_b: MockUpstream
) -> None:
    gw = failover_gateway(router=router())
    upstream_a.set_faults([{"status": 503, "headers": {"x-ratelimit-remaining-requests": "0"}}])
    upstream_b.set_faults([], persistent={"headers": {"x-ratelimit-remaining-requests": "42"}})
    with sdk(gw).chat.completions.with_streaming_response.create(
        model="fast-chat", messages=HELLO, stream=True
    ) as response:
        text = "".join(c.choices[0].delta.content or "" for c in response.parse() if c.choices)
        headers = response.headers
    assert text.startswith("Hello from b!")
    assert headers["x-ratelimit-remaining-requests"] == "42"  # b's, which served it; not a's 0
    assert headers["x-request-id"]


def test_anthropic_limits_are_renamed_for_the_openai_sdk(start_gateway, upstream_a) -> None:
    gw = start_gateway(config(deployment("claude", upstream_a, provider="anthropic")))
    raw = sdk(gw).chat.completions.with_raw_response.create(model="fast-chat", messages=HELLO)
    headers = raw.headers
    assert headers["x-ratelimit-limit-requests"] == "4000"
    assert headers["x-ratelimit-remaining-tokens"] == "399999"
    reset = headers["x-ratelimit-reset-tokens"]  # the mock resets one second from now
    assert reset.endswith("s")
    assert float(reset.removesuffix("ms").removesuffix("s")) <= 2000
    assert headers["anthropic-ratelimit-requests-limit"] == "4000"  # the originals stay
    assert headers["x-request-id"]


def test_openai_limits_are_renamed_for_the_anthropic_sdk(start_gateway, upstream_a) -> None:
    gw = start_gateway(config(deployment("a", upstream_a)))
    with anthropic.Anthropic(base_url=gw.base_url, api_key="sk-caller", max_retries=0) as client:
        raw = client.messages.with_raw_response.create(
            model="fast-chat", max_tokens=20, messages=HELLO
        )
    headers = raw.headers
    assert headers["anthropic-ratelimit-requests-limit"] == "10000"
    assert headers["anthropic-ratelimit-tokens-remaining"] == "1999999"
    reset = datetime.fromisoformat(headers["anthropic-ratelimit-requests-reset"])
    assert reset.tzinfo is not None
    assert abs((reset - datetime.now(UTC)).total_seconds()) < 5
    assert headers["x-ratelimit-limit-requests"] == "10000"
    assert headers["request-id"] == headers["x-request-id"]


def test_nothing_carrying_a_secret_or_another_header_passes(start_gateway, upstream_a) -> None:
    gw = start_gateway(config(deployment("a", upstream_a)))
    upstream_a.set_faults(
        [],
        persistent={
            "headers": {
                "x-ratelimit-echo": MOCK_KEY,  # an upstream echoing the key it was sent
                "x-ratelimit-note": "a\u00e9b" * 40,
                "set-cookie": "session=abc",
                "openai-organization": "org-secret",
            }
        },
    )
    raw = sdk(gw).chat.completions.with_raw_response.create(model="fast-chat", messages=HELLO)
    headers = raw.headers
    assert headers["x-ratelimit-limit-requests"] == "10000"
    for name in ("x-ratelimit-echo", "x-ratelimit-note", "set-cookie", "openai-organization"):
        assert name not in headers
    assert MOCK_KEY not in str(dict(headers))
