"""``POST /v1/messages/count_tokens`` through the stock anthropic SDK: passed on, or estimated."""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

import anthropic
import httpx
import pytest

from edgeproxy_dev.mock_answers import prompt_tokens
from edgeproxy_dev.mock_upstream import MockUpstream
from tests.fixtures.configs import MOCK_KEY, config, deployment
from tests.fixtures.gateway import GatewayServer

SYSTEM = "You are terse."
MESSAGES = [
    {"role": "user", "content": "What is the weather in Paris?"},
    {
        "role": "assistant",
        "content": [{"type": "tool_use", "id": "t1", "name": "get_weather", "input": {"c": "P"}}],
    },
    {
        "role": "user",
        "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "Sunny, 21 C"}],
    },
]
TOOLS = [
    {
        "name": "get_weather",
        "description": "Weather for a city",
        "input_schema": {"type": "object", "properties": {"c": {"type": "string"}}},
    }
]


def counts(upstream: MockUpstream) -> list[dict[str, Any]]:
    return [r for r in upstream.requests() if r["path"] == "/v1/messages/count_tokens"]


@pytest.fixture
def sdk() -> Iterator[Any]:
    clients: list[anthropic.Anthropic] = []

    def make(gateway: GatewayServer) -> anthropic.Anthropic:
        client = anthropic.Anthropic(base_url=gateway.base_url, api_key="sk-caller", max_retries=0)
        clients.append(client)
        return client

    yield make
    for client in clients:
        client.close()


def count(client: anthropic.Anthropic, model: str = "fast-chat") -> Any:
    return client.messages.with_raw_response.count_tokens(
        model=model, system=SYSTEM, messages=MESSAGES, tools=TOOLS
    )


def test_passed_to_the_pools_anthropic_deployment(
    start_gateway, sdk, upstream_a: MockUpstream, upstream_b: MockUpstream
) -> None:
    gw = start_gateway(
        config(
            deployment("compat", upstream_a, priority=5),  # cannot count: skipped
            deployment("claude", upstream_b, provider="anthropic", upstream_model="claude-x"),
        )
    )
    raw = count(sdk(gw))
    expected = prompt_tokens(
        {"model": "claude-x", "system": SYSTEM, "messages": MESSAGES, "tools": TOOLS}
    )
    assert raw.parse().input_tokens == expected
    assert raw.headers["x-edgeproxy-token-count"] == "upstream"
    assert raw.headers["x-edgeproxy-deployment"] == "claude"
    assert raw.headers["request-id"]
    [seen] = counts(upstream_b)
    assert seen["body"]["model"] == "claude-x"
    assert seen["body"]["tools"] == TOOLS
    assert seen["headers"]["x-api-key"] == MOCK_KEY
    assert seen["headers"]["anthropic-version"]
    assert "sk-caller" not in str(seen["headers"])
    assert upstream_a.requests() == []


def test_the_next_anthropic_deployment_then_the_estimate_when_they_fail(
    start_gateway, sdk, upstream_a: MockUpstream, upstream_b: MockUpstream
) -> None:
    gw = start_gateway(
        config(
            deployment("one", upstream_a, provider="anthropic", priority=1),
            deployment("two", upstream_b, provider="anthropic"),
        )
    )
    upstream_a.set_faults([{"status": 529}, {"status": 503}])
    first = count(sdk(gw))
    assert first.headers["x-edgeproxy-deployment"] == "two"
    upstream_b.set_faults([{"reset": True}])
    second = count(sdk(gw))
    assert second.headers["x-edgeproxy-token-count"] == "estimate"
    assert second.parse().input_tokens > 0


@pytest.mark.parametrize("status", [404, 405])
def test_an_anthropic_compatible_upstream_without_the_route_gives_the_estimate(
    start_gateway, sdk, upstream_a: MockUpstream, status: int
) -> None:
    # A compatible server (a FastAPI one, as vLLM's) answers an unknown route 404 or 405.
    gw = start_gateway(config(deployment("compat-claude", upstream_a, provider="anthropic")))
    upstream_a.set_faults([{"status": status, "body": {"detail": "Not Found"}}])
    raw = count(sdk(gw))
    assert raw.status_code == 200
    assert raw.headers["x-edgeproxy-token-count"] == "estimate"
    assert raw.parse().input_tokens > 0
    assert len(counts(upstream_a)) == 1  # asked once, then estimated


def test_a_body_the_upstream_refuses_is_the_clients_400(
    start_gateway, sdk, upstream_a: MockUpstream
) -> None:
    gw = start_gateway(config(deployment("claude", upstream_a, provider="anthropic")))
    upstream_a.set_faults([{"status": 400, "error": {"message": "messages: bad"}}])
    with pytest.raises(anthropic.BadRequestError) as caught:
        count(sdk(gw))
    assert caught.value.body["error"]["type"] == "invalid_request_error"  # type: ignore[index]


def test_estimated_without_an_anthropic_deployment(
    start_gateway, sdk, upstream_a: MockUpstream
) -> None:
    gw = start_gateway(config(deployment("compat", upstream_a)))
    raw = count(sdk(gw))
    # The README's rule: characters / 4, rounded up, over system, messages and tools.
    text = [
        SYSTEM,
        "What is the weather in Paris?",
        "get_weather",
        '{"c": "P"}',
        "Sunny, 21 C",
        "get_weather",
        "Weather for a city",
        '{"type": "object", "properties": {"c": {"type": "string"}}}',
    ]
    assert raw.parse().input_tokens == math.ceil(sum(len(t) for t in text) / 4)
    assert raw.headers["x-edgeproxy-token-count"] == "estimate"
    assert upstream_a.requests() == []


def test_unknown_models_and_bad_bodies(start_gateway, sdk, upstream_a: MockUpstream) -> None:
    gw = start_gateway(config(deployment("compat", upstream_a)))
    with pytest.raises(anthropic.NotFoundError) as caught:
        count(sdk(gw), model="no-such-model")
    assert caught.value.body["error"]["type"] == "not_found_error"  # type: ignore[index]
    url = gw.base_url + "/v1/messages/count_tokens"
    for body in (
        {"messages": MESSAGES},
        {"model": "fast-chat"},
        {"model": "fast-chat", "messages": [{"role": "system", "content": "x"}]},
        {"model": "fast-chat", "messages": MESSAGES, "tools": {}},
    ):
        answer = httpx.post(url, json=body)
        assert answer.status_code == 400, body
        assert answer.json()["error"]["type"] == "invalid_request_error"
