"""The stock openai SDK's ``responses.create`` against a running gateway.

Three pools, one per way a deployment serves the Responses API: translated to
chat completions (``openai_compat``), translated to Anthropic Messages, and
passed through to a deployment that lists ``responses`` (native). Each answers
a function call and then the call's output, in JSON and as a stream.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import openai
import pytest

from edgeproxy_dev.mock_upstream import MockUpstream
from tests.fixtures.configs import config, deployment
from tests.fixtures.gateway import GatewayServer
from tests.fixtures.upstream import MakeUpstream

WEATHER = {
    "type": "function",
    "name": "get_weather",
    "description": "Weather for a city",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
}
CALL = {"tool_call": {"name": "get_weather", "arguments": '{"city": "Paris"}'}}
QUESTION = {"role": "user", "content": "Weather in Paris?"}
POOLS = ("translated-chat", "translated-claude", "native")
PATHS = {
    "translated-chat": "/v1/chat/completions",
    "translated-claude": "/v1/messages",
    "native": "/v1/responses",
}


@pytest.fixture
def upstreams(make_upstream: MakeUpstream) -> dict[str, MockUpstream]:
    return {pool: make_upstream(name) for pool, name in zip(POOLS, "abc", strict=True)}


@pytest.fixture
def gateway(start_gateway, upstreams: dict[str, MockUpstream]) -> GatewayServer:
    return start_gateway(
        config(
            deployment(
                "chat",
                upstreams["translated-chat"],
                model="translated-chat",
                modalities=["text", "image"],
            ),
            deployment(
                "claude",
                upstreams["translated-claude"],
                model="translated-claude",
                provider="anthropic",
                upstream_model="claude-mock",
            ),
            deployment(
                "native",
                upstreams["native"],
                model="native",
                provider="openai",
                operations=["chat", "responses"],
            ),
        )
    )


@pytest.fixture
def client(gateway: GatewayServer) -> Iterator[openai.OpenAI]:
    # Closed after the test: a stream left half-read must not leave its socket to the GC.
    with openai.OpenAI(
        base_url=gateway.base_url + "/v1", api_key="sk-caller", max_retries=0
    ) as sdk:
        yield sdk


def model_requests(upstream: MockUpstream) -> list[dict[str, Any]]:
    return [r for r in upstream.requests() if r["method"] == "POST"]


def round_trip_input(call: Any) -> list[Any]:
    """The second turn: the question, the model's call, and the call's output."""
    return [
        QUESTION,
        call.model_dump(exclude_none=True),
        {"type": "function_call_output", "call_id": call.call_id, "output": "18C and sunny"},
    ]


def check_upstream_saw_the_output(pool: str, upstream: MockUpstream, call_id: str) -> None:
    first, second = model_requests(upstream)
    assert first["path"] == second["path"] == PATHS[pool]
    body = second["body"]
    if pool == "native":  # passed through as the client sent it
        assert body["input"][-1]["type"] == "function_call_output"
        assert body["input"][-1]["call_id"] == call_id
        assert body["tools"][0]["name"] == "get_weather"
    elif pool == "translated-chat":
        tool, assistant = body["messages"][-1], body["messages"][-2]
        assert tool == {"role": "tool", "tool_call_id": call_id, "content": "18C and sunny"}
        assert assistant["tool_calls"][0]["function"]["name"] == "get_weather"
        assert body["tools"][0]["function"]["parameters"] == WEATHER["parameters"]
    else:
        [result] = body["messages"][-1]["content"]
        assert result["type"] == "tool_result"
        assert result["tool_use_id"] == call_id
        assert body["tools"][0]["input_schema"] == WEATHER["parameters"]


@pytest.mark.parametrize("pool", POOLS)
def test_json_function_call_round_trip(
    pool: str, client: openai.OpenAI, upstreams: dict[str, MockUpstream]
) -> None:
    upstream = upstreams[pool]
    upstream.set_faults([CALL])
    first = client.responses.create(
        model=pool, input=[QUESTION], tools=[WEATHER], instructions="Be brief."
    )
    assert first.status == "completed"
    [call] = first.output
    assert call.type == "function_call"
    assert call.name == "get_weather"
    assert json.loads(call.arguments) == {"city": "Paris"}

    second = client.responses.create(model=pool, input=round_trip_input(call), tools=[WEATHER])
    assert second.object == "response"
    assert second.status == "completed"
    name = upstream.name
    assert second.output_text == f"Hello from {name}! The tool said: 18C and sunny"
    assert second.usage is not None
    assert second.usage.output_tokens > 0
    check_upstream_saw_the_output(pool, upstream, call.call_id)


@pytest.mark.parametrize("pool", POOLS)
def test_streamed_function_call_round_trip(
    pool: str, client: openai.OpenAI, upstreams: dict[str, MockUpstream]
) -> None:
    upstream = upstreams[pool]
    upstream.set_faults([CALL])
    events = list(
        client.responses.create(model=pool, input=[QUESTION], tools=[WEATHER], stream=True)
    )
    kinds = [e.type for e in events]
    assert kinds[:2] == ["response.created", "response.in_progress"]
    assert kinds[-1] == "response.completed"
    assert "response.function_call_arguments.delta" in kinds
    assert "response.function_call_arguments.done" in kinds
    numbers = [e.sequence_number for e in events]
    assert numbers == sorted(numbers)
    assert len(set(numbers)) == len(numbers)
    [call] = events[-1].response.output
    assert call.type == "function_call"
    assert json.loads(call.arguments) == {"city": "Paris"}
    deltas = "".join(e.delta for e in events if e.type == "response.function_call_arguments.delta")
    assert json.loads(deltas) == {"city": "Paris"}

    # The SDK's own accumulator rebuilds the second answer from the events.
    with client.responses.stream(
        model=pool, input=round_trip_input(call), tools=[WEATHER]
    ) as stream:
        text = "".join(e.delta for e in stream if e.type == "response.output_text.delta")
        final = stream.get_final_response()
    expected = f"Hello from {upstream.name}! The tool said: 18C and sunny"
    assert text == expected
    assert final.output_text == expected
    assert final.status == "completed"
    check_upstream_saw_the_output(pool, upstream, call.call_id)


def test_text_and_images_translate(
    client: openai.OpenAI, upstreams: dict[str, MockUpstream]
) -> None:
    image = {"type": "input_image", "image_url": "https://example.com/cat.png", "detail": "low"}
    parts = [{"type": "input_text", "text": "What is it?"}, image]
    answer = client.responses.create(
        model="translated-chat",
        input=[
            {"role": "developer", "content": "Answer in French."},
            {"role": "user", "content": parts},
        ],
        max_output_tokens=64,
        temperature=0.5,
        top_p=0.9,
    )
    assert answer.output_text.startswith("Hello from a! You said: What is it?")
    body = model_requests(upstreams["translated-chat"])[0]["body"]
    assert body["messages"][0] == {"role": "system", "content": "Answer in French."}
    assert body["messages"][1]["content"][1] == {
        "type": "image_url",
        "image_url": {"url": "https://example.com/cat.png", "detail": "low"},
    }
    assert (body["max_completion_tokens"], body["temperature"], body["top_p"]) == (64, 0.5, 0.9)


def test_native_only_features_pass_through_to_native_deployments(
    client: openai.OpenAI, upstreams: dict[str, MockUpstream]
) -> None:
    answer = client.responses.create(
        model="native",
        input="And tomorrow?",
        previous_response_id="resp_earlier",
        store=True,
        tools=[{"type": "web_search"}],
    )
    assert answer.id.startswith("resp_mock_c_")  # the upstream's own response object
    [seen] = model_requests(upstreams["native"])
    assert seen["path"] == "/v1/responses"
    assert seen["body"]["previous_response_id"] == "resp_earlier"
    assert seen["body"]["tools"] == [{"type": "web_search"}]
    assert seen["body"]["model"] == "mock-small"


@pytest.mark.parametrize(
    ("extra", "param"),
    [
        ({"previous_response_id": "resp_1"}, "previous_response_id"),
        ({"store": True}, "store"),
        ({"background": True}, "background"),
        ({"tools": [{"type": "web_search"}]}, "tools[0].type"),
        ({"include": ["reasoning.encrypted_content"]}, "include"),
        ({"reasoning": {"effort": "low"}}, "reasoning"),
        ({"input": [{"type": "item_reference", "id": "msg_1"}]}, "input[0].type"),
        ({"input": [{"type": "reasoning", "id": "rs_1", "summary": []}]}, "input[0].type"),
    ],
)
def test_what_does_not_map_is_a_400_naming_the_parameter(
    client: openai.OpenAI, upstreams: dict[str, MockUpstream], extra: dict[str, Any], param: str
) -> None:
    body: dict[str, Any] = {"input": "Hello!", **extra}
    for pool in ("translated-chat", "translated-claude"):
        with pytest.raises(openai.BadRequestError) as caught:
            client.responses.create(model=pool, **body)
        assert caught.value.param == param
        assert param.split("[")[0] in caught.value.message
        with pytest.raises(openai.BadRequestError):  # a stream that cannot open: the real status
            client.responses.create(model=pool, stream=True, **body)
    for pool in ("translated-chat", "translated-claude"):
        assert model_requests(upstreams[pool]) == []  # refused before any upstream call


def test_malformed_bodies_are_clear_400s(client: openai.OpenAI) -> None:
    cases: list[tuple[dict[str, Any], str]] = [
        ({}, "input"),
        ({"input": 5}, "input"),
        ({"input": [{"role": "robot", "content": "x"}]}, "input[0].role"),
        ({"input": "x", "max_output_tokens": 0}, "max_output_tokens"),
        ({"input": "x", "stream": "yes"}, "stream"),
    ]
    for extra, param in cases:
        with pytest.raises(openai.BadRequestError) as caught:
            client.post("/responses", body={"model": "translated-chat", **extra}, cast_to=object)
        assert caught.value.param == param, extra
