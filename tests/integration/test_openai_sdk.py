"""The stock openai SDK against a running gateway: chat, stream, embeddings, errors."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import httpx
import openai
import pytest

from edgeproxy_dev.mock_upstream import MockUpstream
from tests.fixtures.configs import MOCK_KEY, config, deployment
from tests.fixtures.gateway import GatewayServer


@pytest.fixture
def gateway(start_gateway, upstream_a: MockUpstream) -> GatewayServer:
    return start_gateway(
        config(
            deployment("a", upstream_a),
            deployment("emb", upstream_a, model="text-embed", operations=["embeddings"]),
            gateway={"max_body_bytes": 4096},
        )
    )


@pytest.fixture
def client(gateway: GatewayServer) -> Iterator[openai.OpenAI]:
    # Closed after the test: a stream left half-read must not leave its socket to the GC.
    with openai.OpenAI(
        base_url=gateway.base_url + "/v1", api_key="sk-caller", max_retries=0
    ) as sdk:
        yield sdk


def test_chat_answers_from_the_upstream(client: openai.OpenAI, upstream_a: MockUpstream) -> None:
    answer = client.chat.completions.create(
        model="fast-chat",
        messages=[{"role": "user", "content": "Hello!"}],
        extra_body={"vendor_knob": {"x": 1}},
    )
    assert answer.choices[0].message.content == "Hello from a! You said: Hello!"
    assert answer.model == "mock-small"  # what actually served it, not the public name
    [seen] = upstream_a.requests()
    assert seen["body"]["model"] == "mock-small"
    assert seen["body"]["vendor_knob"] == {"x": 1}  # unknown fields pass through
    assert seen["headers"]["authorization"] == f"Bearer {MOCK_KEY}"
    assert "sk-caller" not in str(seen["headers"])  # the client's key is not forwarded


def test_stream_arrives_chunk_by_chunk(client: openai.OpenAI) -> None:
    stream = client.chat.completions.create(
        model="fast-chat", messages=[{"role": "user", "content": "Hello!"}], stream=True
    )
    chunks = list(stream)
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == "Hello from a! You said: Hello!"
    assert len(chunks) > 3
    assert chunks[-1].choices[0].finish_reason == "stop"


def test_embeddings(client: openai.OpenAI) -> None:
    answer = client.embeddings.create(model="text-embed", input=["one", "two"])
    assert len(answer.data) == 2
    assert answer.model == "mock-small"


def test_models_lists_public_models(client: openai.OpenAI) -> None:
    assert sorted(m.id for m in client.models.list()) == ["fast-chat", "text-embed"]


def test_unknown_model_is_404(client: openai.OpenAI) -> None:
    with pytest.raises(openai.NotFoundError) as caught:
        client.chat.completions.create(
            model="no-such-model", messages=[{"role": "user", "content": "x"}]
        )
    assert caught.value.code == "model_not_found"


def test_malformed_bodies_are_clear_400s(gateway: GatewayServer) -> None:
    url = gateway.base_url + "/v1/chat/completions"
    cases = {
        b"{not json": None,
        b"[1, 2]": None,
        b'{"messages": [{"role": "user", "content": "x"}]}': "model",
        b'{"model": "fast-chat"}': "messages",
        b'{"model": 7, "messages": []}': "model",
        b'{"model": "fast-chat", "messages": "hi"}': "messages",
        b'{"model": "fast-chat", "messages": [{"role": "user", "content": 5}]}': (
            "messages[0].content"
        ),
        b'{"model": "fast-chat", "stream": "yes", "messages": [{"role": "user"}]}': "stream",
    }
    for body, param in cases.items():
        answer = httpx.post(url, content=body, headers={"content-type": "application/json"})
        assert answer.status_code == 400, body
        error = answer.json()["error"]
        assert error["type"] == "invalid_request_error"
        assert error["param"] == param, body
        assert error["message"]


def test_oversized_body_is_413(gateway: GatewayServer) -> None:
    big = (
        b'{"model": "fast-chat", "messages": [{"role": "user", "content": "' + b"x" * 5000 + b'"}]}'
    )
    answer = httpx.post(gateway.base_url + "/v1/chat/completions", content=big)
    assert answer.status_code == 413
    assert answer.json()["error"]["code"] == "request_too_large"


def test_upstream_credentials_never_reach_logs_or_answers(
    client: openai.OpenAI, upstream_a: MockUpstream, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    # A provider that echoes the key it was sent, as some do in 401 messages.
    upstream_a.set_faults(
        [{"status": 401, "error": {"message": f"Incorrect API key provided: {MOCK_KEY}"}}]
    )
    with pytest.raises(openai.APIStatusError) as caught:
        client.chat.completions.create(
            model="fast-chat", messages=[{"role": "user", "content": "Hello!"}]
        )
    assert MOCK_KEY not in str(caught.value.body)
    assert caplog.records  # the gateway did log this request
    assert MOCK_KEY not in caplog.text
    assert "sk-caller" not in caplog.text  # nor the client's own key
