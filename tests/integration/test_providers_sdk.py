"""Azure- and Bedrock-shaped deployments behind the gateway, reached with the stock SDKs."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from typing import Any

import anthropic
import openai
import pytest

from edgeproxy_dev.dynamo_server import create_table
from edgeproxy_dev.mock_upstream import MockUpstream
from edgeproxy_dev.template import default_template_path
from tests.fixtures.configs import LOOPBACK, MOCK_KEY, config, deployment
from tests.fixtures.gateway import GatewayServer, store
from tests.fixtures.leaks import WATCH
from tests.fixtures.secrets import remember

HELLO = [{"role": "user", "content": "Hello!"}]
MODEL_ID = "anthropic.claude-3-5-haiku-20241022-v1:0"
WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Weather for a city",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
    },
}
TOOL_CALL = {"name": "get_weather", "arguments": {"city": "Paris"}, "id": "tooluse_7"}
HEADER_SECRET = "cf-0123456789abcdef"  # a header value: never in a log line or a response
NAMES = ("az", "br", "az_down", "br_after", "br_busy", "oa_after", "br_cut")


def azure(dep_id: str, upstream: MockUpstream, model: str, **fields: Any) -> dict[str, Any]:
    return {
        "id": dep_id,
        "model": model,
        "provider": "azure",
        "base_url": upstream.url,
        "upstream_model": "gpt4o-prod",
        "api_version": "2024-10-21",
        "credential": "env:EDGEPROXY_CRED_MOCK_KEY",
        **fields,
    }


def bedrock_mocks(mocks: dict[str, MockUpstream]) -> list[str]:
    return [mocks[name].url for name in ("br", "br_after", "br_busy", "br_cut")]


def bedrock(dep_id: str, upstream: MockUpstream, model: str, **fields: Any) -> dict[str, Any]:
    return {
        "id": dep_id,
        "model": model,
        "provider": "bedrock",
        "region": "us-east-1",
        "base_url": upstream.url,  # the endpoint override: the loopback mock
        "upstream_model": MODEL_ID,
        "modalities": ["text", "image"],
        **fields,
    }


@pytest.fixture(scope="module")
def mocks() -> Iterator[dict[str, MockUpstream]]:
    started = {name: MockUpstream(name, api_key=MOCK_KEY).start() for name in NAMES}
    yield started
    for mock in started.values():
        mock.stop()


@pytest.fixture(scope="module")
def gateway(dynamo_endpoint: str, mocks: dict[str, MockUpstream]) -> Iterator[GatewayServer]:
    table = f"edgeproxy-gw-{uuid.uuid4().hex[:12]}"
    create_table(dynamo_endpoint, table, default_template_path())
    remember(HEADER_SECRET)  # the log watch
    WATCH.secrets.add(HEADER_SECRET)  # the response watch
    headers = {"x-tenant": "acme", "cf-aig-authorization": f"Bearer {HEADER_SECRET}"}
    store(
        dynamo_endpoint,
        table,
        config(
            azure("az", mocks["az"], "azure-chat", headers=headers, query={"tenant": "acme"}),
            bedrock("br", mocks["br"], "claude"),
            # azure fails -> bedrock answers; bedrock throttles -> openai answers
            azure("az-down", mocks["az_down"], "mixed-a", priority=1),
            bedrock("br-after", mocks["br_after"], "mixed-a"),
            bedrock("br-busy", mocks["br_busy"], "mixed-b", priority=1),
            deployment("oa-after", mocks["oa_after"], model="mixed-b"),
            bedrock("br-cut", mocks["br_cut"], "mixed-c", priority=1),
            deployment("oa-after-c", mocks["oa_after"], model="mixed-c"),
            # The owner lists the loopback mocks as Bedrock endpoints (SigV4 for no other host).
            gateway={"egress": {"allow": LOOPBACK, "bedrock_endpoints": bedrock_mocks(mocks)}},
        ),
    )
    server = GatewayServer(dynamo_endpoint, table).start()
    yield server
    server.stop()


@pytest.fixture(autouse=True)
def fresh(mocks: dict[str, MockUpstream]) -> None:
    for mock in mocks.values():
        mock.clear()


@pytest.fixture
def client(gateway: GatewayServer) -> Iterator[openai.OpenAI]:
    with openai.OpenAI(
        base_url=gateway.base_url + "/v1", api_key="sk-provider-caller", max_retries=0
    ) as sdk:
        yield sdk


@pytest.fixture
def claude(gateway: GatewayServer) -> Iterator[anthropic.Anthropic]:
    with anthropic.Anthropic(
        base_url=gateway.base_url, api_key="sk-provider-caller", max_retries=0
    ) as sdk:
        yield sdk


def test_azure_serves_chat_and_streams(
    client: openai.OpenAI, mocks: dict[str, MockUpstream]
) -> None:
    answer = client.chat.completions.create(model="azure-chat", messages=HELLO)
    assert answer.choices[0].message.content == "Hello from az! You said: Hello!"
    assert answer.model == "gpt4o-prod"
    stream = client.chat.completions.create(model="azure-chat", messages=HELLO, stream=True)
    text = "".join(c.choices[0].delta.content or "" for c in stream if c.choices)
    assert text == "Hello from az! You said: Hello!"
    json_call, stream_call = mocks["az"].requests()
    for seen in (json_call, stream_call):
        assert seen["path"] == "/openai/deployments/gpt4o-prod/chat/completions"
        assert seen["query"] == {"tenant": "acme", "api-version": "2024-10-21"}
        assert seen["headers"]["api-key"] == MOCK_KEY
        assert seen["headers"]["x-tenant"] == "acme"
        assert seen["headers"]["cf-aig-authorization"] == f"Bearer {HEADER_SECRET}"
    assert stream_call["body"]["stream_options"] == {"include_usage": True}  # usage is counted


def test_bedrock_serves_chat_and_streams(
    client: openai.OpenAI, mocks: dict[str, MockUpstream]
) -> None:
    answer = client.chat.completions.create(
        model="claude", messages=HELLO, max_tokens=50, temperature=0.5
    )
    assert answer.choices[0].message.content == "Hello from br! You said: Hello!"
    assert answer.choices[0].finish_reason == "stop"
    assert answer.usage is not None
    assert answer.usage.completion_tokens == 6
    chunks = list(
        client.chat.completions.create(
            model="claude",
            messages=HELLO,
            stream=True,
            stream_options={"include_usage": True},
        )
    )
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == "Hello from br! You said: Hello!"
    assert chunks[-1].usage is not None
    assert chunks[-1].usage.completion_tokens == 6
    first, second = mocks["br"].requests()
    assert first["path"].endswith("/converse")
    assert first["body"]["inferenceConfig"] == {"maxTokens": 50, "temperature": 0.5}
    assert second["path"].endswith("/converse-stream")
    assert second["headers"]["authorization"].startswith("AWS4-HMAC-SHA256 Credential=")


def test_anthropic_messages_reach_bedrock(
    claude: anthropic.Anthropic, mocks: dict[str, MockUpstream]
) -> None:
    message = claude.messages.create(
        model="claude", max_tokens=100, system="You are terse.", messages=HELLO
    )
    assert message.content[0].type == "text"
    assert message.content[0].text == "Hello from br! You said: Hello!"
    assert message.stop_reason == "end_turn"
    assert message.usage.output_tokens == 6
    with claude.messages.stream(model="claude", max_tokens=100, messages=HELLO) as stream:
        text = "".join(stream.text_stream)
        final = stream.get_final_message()
    assert text == "Hello from br! You said: Hello!"
    assert final.usage.output_tokens == 6
    sent = mocks["br"].requests()[0]["body"]
    assert sent["system"] == [{"text": "You are terse."}]
    assert sent["inferenceConfig"]["maxTokens"] == 100


def test_tool_calls_through_bedrock(
    client: openai.OpenAI, claude: anthropic.Anthropic, mocks: dict[str, MockUpstream]
) -> None:
    mocks["br"].set_faults([{"tool_call": TOOL_CALL}] * 3)
    answer = client.chat.completions.create(
        model="claude", messages=HELLO, tools=[WEATHER], tool_choice="auto"
    )
    assert answer.choices[0].finish_reason == "tool_calls"
    (call,) = answer.choices[0].message.tool_calls or []
    assert call.id == "tooluse_7"
    assert call.function.name == "get_weather"
    assert json.loads(call.function.arguments) == {"city": "Paris"}
    stream = client.chat.completions.create(
        model="claude", messages=HELLO, tools=[WEATHER], stream=True
    )
    parts = [d for c in stream if c.choices for d in (c.choices[0].delta.tool_calls or [])]
    assert parts[0].function is not None
    assert parts[0].function.name == "get_weather"
    assert json.loads("".join(p.function.arguments or "" for p in parts if p.function)) == {
        "city": "Paris"
    }
    tool = {
        "name": "get_weather",
        "description": "Weather for a city",
        "input_schema": WEATHER["function"]["parameters"],
    }
    message = claude.messages.create(
        model="claude",
        max_tokens=100,
        messages=HELLO,
        tools=[tool],
    )
    assert message.stop_reason == "tool_use"
    block = message.content[-1]
    assert block.type == "tool_use"
    assert (block.id, block.name, block.input) == ("tooluse_7", "get_weather", {"city": "Paris"})
    sent = mocks["br"].requests()[-1]["body"]["toolConfig"]["tools"][0]["toolSpec"]
    assert sent["inputSchema"] == {"json": WEATHER["function"]["parameters"]}


def test_images_reach_bedrock_as_bytes(
    claude: anthropic.Anthropic, mocks: dict[str, MockUpstream]
) -> None:
    source = {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}
    content = [{"type": "image", "source": source}, {"type": "text", "text": "What is it?"}]
    claude.messages.create(
        model="claude",
        max_tokens=50,
        messages=[{"role": "user", "content": content}],
    )
    blocks = mocks["br"].requests()[0]["body"]["messages"][0]["content"]
    # botocore sends the bytes base64-encoded, as Bedrock's JSON protocol wants.
    assert blocks[0] == {"image": {"format": "png", "source": {"bytes": "iVBORw0KGgo="}}}


def test_an_azure_failure_fails_over_to_bedrock(
    client: openai.OpenAI, mocks: dict[str, MockUpstream]
) -> None:
    mocks["az_down"].set_faults([], persistent={"status": 500})
    answer = client.chat.completions.create(model="mixed-a", messages=HELLO)
    assert answer.choices[0].message.content == "Hello from br_after! You said: Hello!"
    assert len(mocks["az_down"].requests()) >= 1
    stream = client.chat.completions.create(model="mixed-a", messages=HELLO, stream=True)
    assert "br_after" in "".join(c.choices[0].delta.content or "" for c in stream if c.choices)


def test_a_bedrock_throttle_fails_over_to_openai(
    client: openai.OpenAI, mocks: dict[str, MockUpstream]
) -> None:
    mocks["br_busy"].set_faults([{"status": 429}])
    answer = client.chat.completions.create(model="mixed-b", messages=HELLO)
    assert answer.choices[0].message.content == "Hello from oa_after! You said: Hello!"
    assert len(mocks["br_busy"].requests()) == 1
    # The throttle opened br-busy's capacity circuit: the next request skips it.
    client.chat.completions.create(model="mixed-b", messages=HELLO)
    assert len(mocks["br_busy"].requests()) == 1


def test_a_bedrock_stream_cut_before_content_fails_over(
    client: openai.OpenAI, mocks: dict[str, MockUpstream]
) -> None:
    mocks["br_cut"].set_faults([{"cut_after_chunks": 1}])
    stream = client.chat.completions.create(model="mixed-c", messages=HELLO, stream=True)
    text = "".join(c.choices[0].delta.content or "" for c in stream if c.choices)
    assert text == "Hello from oa_after! You said: Hello!"
    assert len(mocks["br_cut"].requests()) == 1


def test_bedrock_request_errors_reach_the_client_as_400(
    client: openai.OpenAI, mocks: dict[str, MockUpstream]
) -> None:
    message = "messages.0.content: blank text is not allowed"
    mocks["br"].set_faults([{"status": 400, "error": {"message": message}}])
    with pytest.raises(openai.BadRequestError) as caught:
        client.chat.completions.create(model="claude", messages=HELLO)
    assert message in str(caught.value)
    assert mocks["br"].url not in str(caught.value)


def test_an_upstream_error_echoing_a_header_value_is_scrubbed(
    client: openai.OpenAI, mocks: dict[str, MockUpstream]
) -> None:
    echo = {"message": f"token {HEADER_SECRET} is not valid for this route"}
    mocks["az"].set_faults([{"status": 400, "error": echo}, {"echo_headers": True}])
    with pytest.raises(openai.BadRequestError) as caught:
        client.chat.completions.create(model="azure-chat", messages=HELLO)
    assert HEADER_SECRET not in str(caught.value.body)
    assert "is not valid for this route" in str(caught.value.body)
    answer = client.chat.completions.create(model="azure-chat", messages=HELLO)
    assert answer.choices[0].message.content is not None
    assert HEADER_SECRET not in answer.choices[0].message.content  # echoed request headers
    assert MOCK_KEY not in answer.choices[0].message.content
