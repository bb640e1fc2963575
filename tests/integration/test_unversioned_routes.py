"""Routes without ``/v1`` (as LiteLLM serves them): the stock openai SDK with a bare base URL."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import openai
import pytest

from edgeproxy_dev.mock_upstream import MockUpstream
from tests.fixtures.configs import config, deployment
from tests.fixtures.gateway import GatewayServer


@pytest.fixture
def gateway(start_gateway, upstream_a: MockUpstream) -> GatewayServer:
    return start_gateway(
        config(
            deployment("a", upstream_a, operations=["chat", "completions", "responses"]),
            deployment("emb", upstream_a, model="text-embed", operations=["embeddings"]),
        )
    )


@pytest.fixture
def client(gateway: GatewayServer) -> Iterator[openai.OpenAI]:
    # The base URL a LiteLLM user may have written: no /v1.
    with openai.OpenAI(base_url=gateway.base_url, api_key="sk-caller", max_retries=0) as sdk:
        yield sdk


def test_chat_json_and_stream(client: openai.OpenAI, upstream_a: MockUpstream) -> None:
    answer = client.chat.completions.create(
        model="fast-chat", messages=[{"role": "user", "content": "Hello!"}]
    )
    assert answer.choices[0].message.content == "Hello from a! You said: Hello!"
    stream = client.chat.completions.create(
        model="fast-chat", messages=[{"role": "user", "content": "Hi"}], stream=True
    )
    text = "".join(c.choices[0].delta.content or "" for c in stream if c.choices)
    assert text == "Hello from a! You said: Hi"
    assert [r["path"] for r in upstream_a.requests()] == ["/v1/chat/completions"] * 2


def test_completions_embeddings_models(client: openai.OpenAI) -> None:
    text = client.completions.create(model="fast-chat", prompt="Say hi")
    assert text.choices[0].text
    vectors = client.embeddings.create(model="text-embed", input=["one", "two"])
    assert len(vectors.data) == 2
    assert sorted(m.id for m in client.models.list()) == ["fast-chat", "text-embed"]
    assert client.models.retrieve("fast-chat").id == "fast-chat"
    with pytest.raises(openai.NotFoundError):
        client.models.retrieve("no-such-model")


def test_responses(client: openai.OpenAI) -> None:
    answer = client.responses.create(model="fast-chat", input="Hello!")
    assert answer.output_text


def test_messages_and_count_tokens_answer_as_anthropic(gateway: GatewayServer) -> None:
    body = {
        "model": "fast-chat",
        "max_tokens": 50,
        "messages": [{"role": "user", "content": "Hello!"}],
    }
    with httpx.Client(base_url=gateway.base_url, timeout=30) as http:
        plain, versioned = (http.post(p, json=body) for p in ("/messages", "/v1/messages"))
        assert plain.status_code == versioned.status_code == 200
        assert plain.json()["type"] == "message"
        assert plain.json()["content"] == versioned.json()["content"]
        counted = http.post("/messages/count_tokens", json={**body, "max_tokens": None})
        assert counted.status_code == 200, counted.text
        assert counted.json()["input_tokens"] > 0
        # Errors keep the surface of the path: Anthropic's shape under /messages.
        unknown = http.post("/messages", json={**body, "model": "no-such-model"})
        assert unknown.status_code == 404
        assert unknown.json()["type"] == "error"
        wrong_method = http.get("/messages")
        assert wrong_method.status_code == 405
        assert wrong_method.json()["type"] == "error"


def test_admin_deployments_view_keeps_its_one_path(gateway: GatewayServer) -> None:
    with httpx.Client(base_url=gateway.base_url, timeout=30) as http:
        answer = http.get("/models/fast-chat/deployments")
    # Read as the model "fast-chat/deployments", which does not exist: not the admin view.
    assert answer.status_code == 404
    assert "deployments" not in answer.json()
