"""The mock upstream itself: control API, fault queue, auth, request log."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest

from edgeproxy_dev.mock_upstream import MockUpstream
from tests.fixtures.upstream import MakeUpstream

CHAT = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}


async def statuses(http: httpx.AsyncClient, upstream: MockUpstream, n: int) -> list[int]:
    url = upstream.base_url + "/chat/completions"
    return [(await http.post(url, json=CHAT)).status_code for _ in range(n)]


async def test_control_api_queue_then_persistent(upstream_a: MockUpstream) -> None:
    async with httpx.AsyncClient(trust_env=False) as http:
        control = await http.post(
            upstream_a.url + "/_mock/faults",
            json={"faults": [{"status": 500}, {"status": 429}], "persistent": {"status": 503}},
        )
        assert control.status_code == 200
        assert await statuses(http, upstream_a, 4) == [500, 429, 503, 503]

        await http.delete(upstream_a.url + "/_mock/faults")
        assert await statuses(http, upstream_a, 1) == [200]

        log = (await http.get(upstream_a.url + "/_mock/requests")).json()["requests"]
        assert len(log) == 5  # control calls are not logged
        assert log[0]["body"] == CHAT
        assert log[0]["headers"]["content-type"] == "application/json"
        await http.delete(upstream_a.url + "/_mock/requests")
        assert upstream_a.requests() == []


async def test_unknown_fault_keys_are_rejected(upstream_a: MockUpstream) -> None:
    async with httpx.AsyncClient(trust_env=False) as http:
        answer = await http.post(upstream_a.url + "/_mock/faults", json={"faults": [{"stauts": 1}]})
    assert answer.status_code == 400
    assert "stauts" in answer.json()["error"]
    with pytest.raises(ValueError, match="stauts"):
        upstream_a.set_faults([{"stauts": 500}])


async def test_python_api_and_clear(upstream_a: MockUpstream) -> None:
    upstream_a.set_faults([{"status": 500}], persistent={"status": 502})
    async with httpx.AsyncClient(trust_env=False) as http:
        assert await statuses(http, upstream_a, 2) == [500, 502]
        upstream_a.clear()
        assert upstream_a.requests() == []
        assert await statuses(http, upstream_a, 1) == [200]


async def test_models_and_unknown_paths(upstream_a: MockUpstream) -> None:
    async with httpx.AsyncClient(trust_env=False) as http:
        models = (await http.get(upstream_a.base_url + "/models")).json()
        missing = await http.post(upstream_a.base_url + "/nope", json={})
    assert models["data"][0] == {"id": "mock-model", "object": "model", "owned_by": "a"}
    assert missing.status_code == 404
    assert missing.json()["error"]["message"] == "Not found."


async def test_api_key_is_checked(make_upstream: MakeUpstream) -> None:
    guarded = make_upstream("g", api_key="sk-right")
    url = guarded.base_url + "/chat/completions"
    async with httpx.AsyncClient(trust_env=False) as http:
        wrong = await http.post(url, json=CHAT, headers={"authorization": "Bearer sk-wrong"})
        right = await http.post(url, json=CHAT, headers={"authorization": "Bearer sk-right"})
        anthropic = await http.post(
            guarded.base_url + "/messages", json=CHAT, headers={"x-api-key": "sk-right"}
        )
    assert wrong.status_code == 401
    assert wrong.json()["error"]["code"] == "invalid_api_key"
    assert (right.status_code, anthropic.status_code) == (200, 200)


async def test_chunked_request_body(upstream_a: MockUpstream) -> None:
    async def body() -> AsyncIterator[bytes]:
        yield b'{"model": "m", '
        yield b'"messages": []}'

    async with httpx.AsyncClient(trust_env=False) as http:
        answer = await http.post(upstream_a.base_url + "/chat/completions", content=body())
    assert answer.status_code == 200
    assert upstream_a.requests()[0]["body"] == {"model": "m", "messages": []}


def test_two_upstreams_are_told_apart(upstream_a: MockUpstream, upstream_b: MockUpstream) -> None:
    with httpx.Client(trust_env=False) as http:
        a = http.post(upstream_a.base_url + "/chat/completions", json=CHAT).json()
        b = http.post(upstream_b.base_url + "/chat/completions", json=CHAT).json()
    assert (a["system_fingerprint"], b["system_fingerprint"]) == ("mock-a", "mock-b")
    assert a["choices"][0]["message"]["content"] == "Hello from a! You said: hi"
    assert upstream_a.port != upstream_b.port


def test_fixed_content_and_restartable_port() -> None:
    with MockUpstream("fixed", default_content="same every time") as first:
        port = first.port
        with httpx.Client(trust_env=False) as http:
            answer = http.post(first.base_url + "/chat/completions", json=CHAT).json()
        assert answer["choices"][0]["message"]["content"] == "same every time"
    with MockUpstream("again", port=port) as second:
        assert second.port == port


WEATHER_CHAT = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
    },
}


@pytest.mark.parametrize(
    ("choice", "calls"),
    [
        ("required", True),
        ({"type": "function", "function": {"name": "get_weather"}}, True),
        ("auto", False),
        (None, False),
    ],
)
async def test_a_required_tool_is_called_as_a_model_must(
    upstream_a: MockUpstream, choice: object, calls: bool
) -> None:
    # So that the README's tool examples work against `make run`, fault-free.
    body = {
        "model": "m",
        "messages": [{"role": "user", "content": "Weather in Paris?"}],
        "tools": [WEATHER_CHAT],
        **({"tool_choice": choice} if choice else {}),
    }
    async with httpx.AsyncClient(trust_env=False) as http:
        answer = (await http.post(upstream_a.base_url + "/chat/completions", json=body)).json()
        message = answer["choices"][0]["message"]
        if calls:
            (call,) = message["tool_calls"]
            assert call["function"] == {"name": "get_weather", "arguments": '{"city": "Paris"}'}
            assert answer["choices"][0]["finish_reason"] == "tool_calls"
        else:
            assert message["content"].startswith("Hello from a!")
        # The tool's result given back: an answer in text, not a second call.
        result = {"role": "tool", "tool_call_id": "call_1", "content": "18 C"}
        again = {**body, "messages": [*body["messages"], result]}
        followed = (await http.post(upstream_a.base_url + "/chat/completions", json=again)).json()
        assert followed["choices"][0]["message"].get("tool_calls") is None


async def test_anthropic_any_and_responses_required_call_the_tool(upstream_a: MockUpstream) -> None:
    tool = {"name": "get_weather", "input_schema": WEATHER_CHAT["function"]["parameters"]}
    messages = {
        "model": "m",
        "max_tokens": 50,
        "tools": [tool],
        "tool_choice": {"type": "any"},
        "messages": [{"role": "user", "content": "Weather in Paris?"}],
    }
    flat = {"type": "function", "name": "get_weather", **{"parameters": tool["input_schema"]}}
    responses = {
        "model": "m",
        "input": "Weather in Paris?",
        "tools": [flat],
        "tool_choice": "required",
    }
    async with httpx.AsyncClient(trust_env=False) as http:
        message = (await http.post(upstream_a.base_url + "/messages", json=messages)).json()
        answer = (await http.post(upstream_a.base_url + "/responses", json=responses)).json()
    assert message["content"][0]["type"] == "tool_use"
    assert message["content"][0]["input"] == {"city": "Paris"}
    (item,) = [i for i in answer["output"] if i["type"] == "function_call"]
    assert (item["name"], item["arguments"]) == ("get_weather", '{"city": "Paris"}')
