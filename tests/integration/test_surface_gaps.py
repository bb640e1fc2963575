"""Surface gaps (issue 23, item 8) through the stock SDKs against a gateway and the mocks.

- a chat stream served by an Anthropic deployment sends the ``include_usage``
  chunk when the client asks, with the tokens Anthropic reported;
- ``/v1/messages``' ``message_start`` reports the input tokens: the upstream's
  own count from an Anthropic deployment, the estimate from an OpenAI-style one;
- an operation a pool does not serve is a 404 naming the model and operation.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import anthropic
import httpx
import openai
import pytest

from edgeproxy.api.surfaces.messages_tokens import estimate
from edgeproxy_dev.mock_answers import pieces, prompt_tokens
from edgeproxy_dev.mock_upstream import MockUpstream
from tests.fixtures.configs import config, deployment
from tests.fixtures.gateway import GatewayServer

HELLO = [{"role": "user", "content": "Hello there, how are you today?"}]
IMAGE = {
    "type": "image",
    "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="},
}


@pytest.fixture
def gateway(
    start_gateway: Any, upstream_a: MockUpstream, upstream_b: MockUpstream
) -> GatewayServer:
    """``claude``: an Anthropic deployment; ``fast-chat``: OpenAI-style; ``chat-only``: chat only."""
    server: GatewayServer = start_gateway(
        config(
            deployment("claude-b", upstream_b, model="claude", provider="anthropic"),
            deployment("a", upstream_a),
            deployment("o", upstream_a, model="chat-only", operations=["chat"]),
            deployment("e", upstream_a, model="embed-only", operations=["embeddings"]),
        )
    )
    return server


@pytest.fixture
def oai(gateway: GatewayServer) -> Iterator[openai.OpenAI]:
    with openai.OpenAI(
        base_url=gateway.base_url + "/v1", api_key="sk-caller", max_retries=0
    ) as client:
        yield client


@pytest.fixture
def claude(gateway: GatewayServer) -> Iterator[anthropic.Anthropic]:
    with anthropic.Anthropic(
        base_url=gateway.base_url, api_key="sk-caller", max_retries=0
    ) as client:
        yield client


def messages_calls(upstream: MockUpstream) -> list[dict[str, Any]]:
    return [r for r in upstream.requests() if r["path"] == "/v1/messages"]


def test_an_anthropic_served_chat_stream_sends_the_usage_chunk_when_asked(
    oai: openai.OpenAI, upstream_b: MockUpstream
) -> None:
    chunks = list(
        oai.chat.completions.create(
            model="claude",
            messages=HELLO,
            stream=True,
            stream_options={"include_usage": True},
        )
    )
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text.startswith("Hello from b!")
    last = chunks[-1]
    assert last.choices == []
    assert last.usage is not None
    [call] = messages_calls(upstream_b)
    assert "stream_options" not in call["body"]  # not Anthropic's field: never sent there
    assert last.usage.prompt_tokens == prompt_tokens(call["body"])
    assert last.usage.completion_tokens == len(pieces(text))
    assert last.usage.total_tokens == last.usage.prompt_tokens + last.usage.completion_tokens
    assert all(c.usage is None for c in chunks[:-1])


def test_without_include_usage_the_stream_has_no_usage_chunk(oai: openai.OpenAI) -> None:
    chunks = list(oai.chat.completions.create(model="claude", messages=HELLO, stream=True))
    assert chunks
    assert all(c.choices for c in chunks)
    assert all(c.usage is None for c in chunks)


def test_message_start_reports_the_input_tokens_an_anthropic_upstream_counted(
    claude: anthropic.Anthropic, upstream_b: MockUpstream
) -> None:
    with claude.messages.stream(model="claude", max_tokens=50, messages=HELLO) as events:
        kinds = list(events)
        final = events.get_final_message()
    start = next(e for e in kinds if e.type == "message_start")
    [call] = messages_calls(upstream_b)
    counted = prompt_tokens(call["body"])
    assert counted > 0
    assert start.message.usage.input_tokens == counted
    assert final.usage.input_tokens == counted


def test_message_start_reports_the_estimate_from_an_openai_style_upstream(
    claude: anthropic.Anthropic, upstream_a: MockUpstream
) -> None:
    body = {"model": "fast-chat", "max_tokens": 50, "messages": HELLO, "system": "Be brief."}
    # Its usage chunk comes seconds after the first content: unknown when message_start goes.
    upstream_a.set_faults([{"chunk_delay_ms": 500}])
    with claude.messages.stream(
        model="fast-chat", max_tokens=50, messages=HELLO, system="Be brief."
    ) as events:
        kinds = list(events)
        final = events.get_final_message()
    start = next(e for e in kinds if e.type == "message_start")
    expected = estimate(body)
    assert expected > 1
    assert start.message.usage.input_tokens == expected
    # The end carries what the upstream reported in its usage chunk.
    [call] = [r for r in upstream_a.requests() if r["path"] == "/v1/chat/completions"]
    assert final.usage.input_tokens == prompt_tokens(call["body"])


def test_an_operation_the_pool_does_not_serve_is_a_404_naming_it(
    oai: openai.OpenAI, gateway: GatewayServer, upstream_a: MockUpstream
) -> None:
    with pytest.raises(openai.NotFoundError) as caught:
        oai.completions.create(model="chat-only", prompt="Hi")
    assert caught.value.code == "operation_not_supported"
    assert "`chat-only`" in caught.value.message
    assert "/v1/completions" in caught.value.message
    with pytest.raises(openai.NotFoundError) as caught:
        oai.embeddings.create(model="claude", input="Hi")
    assert "`claude`" in caught.value.message
    assert "embeddings" in caught.value.message
    with pytest.raises(openai.NotFoundError) as caught:
        oai.chat.completions.create(model="embed-only", messages=HELLO, stream=True)
    assert "/v1/chat/completions" in caught.value.message
    assert upstream_a.requests() == []  # refused before any routing
    # The Anthropic surface answers in its own format.
    answer = httpx.post(
        gateway.base_url + "/v1/messages",
        json={"model": "embed-only", "max_tokens": 10, "messages": HELLO},
        timeout=30,
    )
    assert answer.status_code == 404
    assert answer.json()["type"] == "error"
    assert answer.json()["error"]["type"] == "not_found_error"
    assert "`embed-only`" in answer.json()["error"]["message"]
    assert "/v1/messages" in answer.json()["error"]["message"]


def test_the_modality_refusal_names_the_modality(claude: anthropic.Anthropic) -> None:
    content = [IMAGE, {"type": "text", "text": "What is it?"}]
    with pytest.raises(anthropic.BadRequestError) as caught:
        claude.messages.create(
            model="claude", max_tokens=10, messages=[{"role": "user", "content": content}]
        )
    message = caught.value.body["error"]["message"]  # type: ignore[index]
    assert "image input" in message
    assert "accept text only" in message
