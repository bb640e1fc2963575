"""The stock anthropic SDK against a running gateway backed by OpenAI-compatible mocks."""

from __future__ import annotations

import hashlib
import json
import uuid
from collections.abc import Iterator
from typing import Any

import anthropic
import boto3
import httpx
import pytest

from edgeproxy.routing.affinity import caller_id, key_digest
from edgeproxy.state.dynamodb.schema import TableSchema
from edgeproxy_dev.dynamo_server import client_kwargs, create_table
from edgeproxy_dev.mock_upstream import MockUpstream
from edgeproxy_dev.template import default_template_path
from tests.fixtures.configs import config, deployment
from tests.fixtures.gateway import AUTH_REQUIRED, GatewayServer, store
from tests.fixtures.table import TableView, wait_for
from tests.integration.resilience.helpers import router

HELLO = [{"role": "user", "content": "Hello!"}]
CLIENT_KEY = "sk-anthropic-caller"
TOOL = {
    "name": "get_weather",
    "description": "Weather for a city",
    "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}},
}


def error_type(exc: anthropic.APIStatusError) -> str:
    """The Anthropic error type in an SDK exception's body (checking the envelope)."""
    assert isinstance(exc.body, dict)
    assert exc.body["type"] == "error"
    return str(exc.body["error"]["type"])


def model_requests(upstream: MockUpstream) -> list[dict[str, Any]]:
    return [r for r in upstream.requests() if r["path"].startswith("/v1/chat")]


@pytest.fixture(scope="module")
def shared_upstream() -> Iterator[MockUpstream]:
    with MockUpstream("a") as upstream:
        yield upstream


@pytest.fixture(scope="module")
def gateway(dynamo_endpoint: str, shared_upstream: MockUpstream) -> Iterator[GatewayServer]:
    """One gateway for the tests that need no special configuration (starting one costs ~1 s)."""
    table = f"edgeproxy-gw-{uuid.uuid4().hex[:12]}"
    create_table(dynamo_endpoint, table, default_template_path())
    store(
        dynamo_endpoint,
        table,
        config(
            deployment("a", shared_upstream, modalities=["text", "image"]),
            gateway={"max_body_bytes": 4096},
        ),
    )
    server = GatewayServer(dynamo_endpoint, table).start()
    yield server
    server.stop()


@pytest.fixture
def upstream(shared_upstream: MockUpstream) -> MockUpstream:
    """The shared gateway's upstream, with no faults and an empty request log."""
    shared_upstream.clear()
    return shared_upstream


@pytest.fixture
def client(gateway: GatewayServer) -> Iterator[anthropic.Anthropic]:
    with anthropic.Anthropic(base_url=gateway.base_url, api_key=CLIENT_KEY, max_retries=0) as sdk:
        yield sdk


def test_create_answers_from_the_upstream(
    client: anthropic.Anthropic, upstream: MockUpstream
) -> None:
    message = client.messages.create(
        model="fast-chat",
        max_tokens=100,
        system="You are terse.",
        messages=HELLO,
        stop_sequences=["END"],
        extra_body={"top_k": 5},
    )
    assert message.type == "message"
    assert message.role == "assistant"
    assert message.content[0].type == "text"
    assert message.content[0].text == "Hello from a! You said: Hello!"
    assert message.model == "mock-small"  # what actually served it, not the public name
    assert message.stop_reason == "end_turn"
    assert message.usage.input_tokens > 0
    assert message.usage.output_tokens == 6
    [seen] = model_requests(upstream)
    body = seen["body"]
    assert body["model"] == "mock-small"
    assert body["messages"] == [
        {"role": "system", "content": "You are terse."},
        {"role": "user", "content": "Hello!"},
    ]
    assert body["max_tokens"] == 100
    assert body["stop"] == ["END"]
    assert "top_k" not in body
    assert CLIENT_KEY not in json.dumps(seen["headers"])  # the client's key stays here


def test_stream_true_yields_anthropic_events(client: anthropic.Anthropic) -> None:
    events = list(
        client.messages.create(model="fast-chat", max_tokens=100, messages=HELLO, stream=True)
    )
    kinds = [e.type for e in events]
    assert kinds[0] == "message_start"
    assert kinds[-2:] == ["message_delta", "message_stop"]
    text = "".join(
        e.delta.text
        for e in events
        if e.type == "content_block_delta" and e.delta.type == "text_delta"
    )
    assert text == "Hello from a! You said: Hello!"
    assert kinds.count("content_block_delta") > 3  # chunk by chunk, not one lump


def test_messages_stream_helper_accumulates_the_message(
    client: anthropic.Anthropic, upstream: MockUpstream
) -> None:
    with client.messages.stream(
        model="fast-chat", max_tokens=100, system="Be kind.", messages=HELLO
    ) as stream:
        text = "".join(stream.text_stream)
        final = stream.get_final_message()
    assert text == "Hello from a! You said: Hello!"
    assert final.content[0].text == text
    assert final.stop_reason == "end_turn"
    assert final.usage.output_tokens == 6
    assert final.usage.input_tokens > 0  # from the usage chunk the gateway asked for
    [seen] = model_requests(upstream)
    assert seen["body"]["messages"][0] == {"role": "system", "content": "Be kind."}
    assert seen["body"]["stream"] is True


def test_a_stream_cut_mid_answer_ends_with_an_error_event(
    client: anthropic.Anthropic, upstream: MockUpstream
) -> None:
    upstream.set_faults([{"cut_after_chunks": 3}])  # the answer is committed by then
    received: list[str] = []
    with (
        pytest.raises(anthropic.APIStatusError) as caught,
        client.messages.stream(model="fast-chat", max_tokens=50, messages=HELLO) as events,
    ):
        received.extend(events.text_stream)
    assert "".join(received) == "Hello from "
    assert error_type(caught.value) == "api_error"
    assert "ended before" in str(caught.value)


def test_tool_calls_come_back_as_tool_use(
    client: anthropic.Anthropic, upstream: MockUpstream
) -> None:
    call = {
        "id": "call_7",
        "type": "function",
        "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
    }
    answer = {
        "id": "chatcmpl-tool",
        "object": "chat.completion",
        "model": "mock-small",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": None, "tool_calls": [call]},
                "finish_reason": "tool_calls",
            }
        ],
        "usage": {"prompt_tokens": 20, "completion_tokens": 8, "total_tokens": 28},
    }
    upstream.set_faults([{"body": answer}])
    message = client.messages.create(
        model="fast-chat",
        max_tokens=100,
        messages=[{"role": "user", "content": "Weather in Paris?"}],
        tools=[TOOL],
        tool_choice={"type": "any"},
    )
    assert message.stop_reason == "tool_use"
    [block] = message.content
    assert block.type == "tool_use"
    assert (block.id, block.name, block.input) == ("call_7", "get_weather", {"city": "Paris"})
    body = model_requests(upstream)[0]["body"]
    assert body["tools"][0]["function"]["parameters"] == TOOL["input_schema"]
    assert body["tool_choice"] == "required"


def test_images_route_to_image_capable_deployments(
    client: anthropic.Anthropic, upstream: MockUpstream
) -> None:
    source = {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}
    content = [{"type": "image", "source": source}, {"type": "text", "text": "What is it?"}]
    client.messages.create(
        model="fast-chat", max_tokens=50, messages=[{"role": "user", "content": content}]
    )
    parts = model_requests(upstream)[0]["body"]["messages"][0]["content"]
    assert parts[0] == {
        "type": "image_url",
        "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="},
    }


def test_unknown_model_is_not_found(client: anthropic.Anthropic) -> None:
    with pytest.raises(anthropic.NotFoundError) as caught:
        client.messages.create(model="no-such-model", max_tokens=10, messages=HELLO)
    assert caught.value.status_code == 404
    assert error_type(caught.value) == "not_found_error"
    with pytest.raises(anthropic.NotFoundError):  # a stream that cannot open: the real status
        client.messages.create(model="no-such-model", max_tokens=10, messages=HELLO, stream=True)
    assert caught.value.request_id  # the gateway's request id, as Anthropic's header


def test_models_answer_in_anthropics_shape(client: anthropic.Anthropic) -> None:
    raw = client.models.with_raw_response.retrieve("fast-chat")
    assert raw.json() == {
        "type": "model",
        "id": "fast-chat",
        "display_name": "fast-chat",
        "created_at": "1970-01-01T00:00:00Z",
    }
    info = raw.parse()
    assert (info.type, info.id, info.display_name) == ("model", "fast-chat", "fast-chat")
    assert info.created_at.year == 1970
    page = client.models.list()
    assert [m.id for m in page] == ["fast-chat"]
    assert [m.type for m in page.data] == ["model"]
    assert page.has_more is False
    with pytest.raises(anthropic.NotFoundError):
        client.models.retrieve("no-such-model")


def test_malformed_bodies_are_bad_requests(
    client: anthropic.Anthropic, gateway: GatewayServer
) -> None:
    with pytest.raises(anthropic.BadRequestError) as caught:
        client.messages.create(
            model="fast-chat",
            max_tokens=10,
            messages=[{"role": "user", "content": [{"type": "document", "source": {}}]}],
        )
    assert error_type(caught.value) == "invalid_request_error"
    url = gateway.base_url + "/v1/messages"
    for raw, mentions in {
        b"{not json": "JSON",
        b'{"model": "fast-chat", "messages": [{"role": "user", "content": "x"}]}': "max_tokens",
        b'{"model": "fast-chat", "max_tokens": 5}': "messages",
    }.items():
        answer = httpx.post(url, content=raw, headers={"x-api-key": CLIENT_KEY})
        assert answer.status_code == 400, raw
        assert answer.json()["type"] == "error"
        assert answer.json()["error"]["type"] == "invalid_request_error"
        assert mentions in answer.json()["error"]["message"]


def test_oversized_body_is_413_in_anthropic_shape(gateway: GatewayServer) -> None:
    big = json.dumps(
        {
            "model": "fast-chat",
            "max_tokens": 5,
            "messages": [{"role": "user", "content": "x" * 5000}],
        }
    )
    answer = httpx.post(gateway.base_url + "/v1/messages", content=big)
    assert answer.status_code == 413
    assert answer.json()["error"]["type"] == "request_too_large"


def test_auth_uses_x_api_key(start_gateway, upstream_a: MockUpstream) -> None:
    digest = hashlib.sha256(CLIENT_KEY.encode()).hexdigest()
    gw = start_gateway(
        config(
            deployment("a", upstream_a),
            gateway={"api_keys": [{"name": "caller", "sha256": digest}]},
        ),
        env=AUTH_REQUIRED,
    )
    with anthropic.Anthropic(base_url=gw.base_url, api_key=CLIENT_KEY, max_retries=0) as good:
        assert good.messages.create(model="fast-chat", max_tokens=5, messages=HELLO).content
    with (
        anthropic.Anthropic(base_url=gw.base_url, api_key="sk-wrong", max_retries=0) as bad,
        pytest.raises(anthropic.AuthenticationError) as caught,
    ):
        bad.messages.create(model="fast-chat", max_tokens=5, messages=HELLO)
    assert error_type(caught.value) == "authentication_error"


def test_failover_when_the_first_upstream_is_503(
    failover_gateway, upstream_a: MockUpstream, upstream_b: MockUpstream
) -> None:
    # Sticky off, so the second request asks ``a`` (the higher priority) first again.
    gw = failover_gateway(router=router())
    upstream_a.set_faults([{"status": 503}, {"status": 503}])
    with anthropic.Anthropic(base_url=gw.base_url, api_key=CLIENT_KEY, max_retries=0) as sdk:
        answer = sdk.messages.create(model="fast-chat", max_tokens=50, messages=HELLO)
        with sdk.messages.stream(model="fast-chat", max_tokens=50, messages=HELLO) as events:
            streamed = "".join(events.text_stream)
    assert answer.content[0].type == "text"
    assert answer.content[0].text.startswith("Hello from b!")
    assert streamed.startswith("Hello from b!")
    assert len(model_requests(upstream_a)) == 2
    assert len(model_requests(upstream_b)) == 2


def test_every_upstream_failing_keeps_status_and_retry_after(
    start_gateway, upstream_a: MockUpstream
) -> None:
    gw = start_gateway(config(deployment("a", upstream_a), router=router(json={"max_attempts": 1})))
    # Longer than the 5 s throttle floor, so the provider's own wait is the one told.
    upstream_a.set_faults([], persistent={"status": 429, "retry_after": "8"})
    with (
        anthropic.Anthropic(base_url=gw.base_url, api_key=CLIENT_KEY, max_retries=0) as sdk,
        pytest.raises(anthropic.RateLimitError) as caught,
    ):
        sdk.messages.create(model="fast-chat", max_tokens=5, messages=HELLO)
    assert caught.value.response.headers["retry-after"] == "8"
    assert error_type(caught.value) == "rate_limit_error"


def test_sticky_binding_is_kept_per_surface(
    client: anthropic.Anthropic,
    gateway: GatewayServer,
    dynamo_endpoint: str,
    table_schema: TableSchema,
) -> None:
    client.messages.create(model="fast-chat", max_tokens=5, messages=HELLO)
    dynamo = boto3.client("dynamodb", **client_kwargs(dynamo_endpoint))
    try:
        view = TableView(dynamo, gateway.table, table_schema)
        caller = caller_id(key_digest(CLIENT_KEY), None, "127.0.0.1")
        binding = wait_for(
            lambda: view.binding(caller, protocol="anthropic.messages"),
            lambda found: found is not None,
            "the anthropic.messages binding",
        )
        assert binding is not None
        assert binding.deployment_id == "a"
        assert view.binding(caller, protocol="openai.chat") is None
    finally:
        dynamo.close()


def test_streamed_usage_is_what_an_anthropic_upstream_reported(
    start_gateway, upstream_b: MockUpstream
) -> None:
    gw = start_gateway(config(deployment("b", upstream_b, provider="anthropic")))
    with (
        anthropic.Anthropic(base_url=gw.base_url, api_key=CLIENT_KEY, max_retries=0) as sdk,
        sdk.messages.stream(model="fast-chat", max_tokens=50, messages=HELLO) as events,
    ):
        text = "".join(events.text_stream)
        final = events.get_final_message()
    assert text.startswith("Hello from b!")
    assert final.usage.input_tokens > 0
    assert final.usage.output_tokens > 0
