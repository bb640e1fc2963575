"""Azure and Bedrock deployments through UpstreamClient, against the loopback mock."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from edgeproxy.config.deployment import Deployment
from edgeproxy.config.egress import EgressSettings
from edgeproxy.config.policies import Operation
from edgeproxy.errors import UpstreamFault
from edgeproxy.routing.failures import classify
from edgeproxy.routing.faults import FailureClass, FaultKind
from edgeproxy.upstream.call import StreamEvent, UpstreamCall
from edgeproxy.upstream.client import UpstreamClient, make_http_client
from edgeproxy_dev.mock_upstream import MockUpstream
from tests.fixtures.configs import LOOPBACK_EGRESS
from tests.integration.upstream.helpers import MESSAGES, drain

MODEL_ID = "us.anthropic.claude-3-5-haiku-20241022-v1:0"


def azure(upstream: MockUpstream, **fields: Any) -> Deployment:
    return Deployment.model_validate(
        {
            "id": "az",
            "model": "gpt-4o",
            "provider": "azure",
            "base_url": upstream.url,
            "upstream_model": "my-gpt4o",
            "credential": "env:AZURE_KEY",
            **fields,
        }
    )


def bedrock(upstream: MockUpstream, **fields: Any) -> Deployment:
    return Deployment.model_validate(
        {
            "id": "br",
            "model": "claude",
            "provider": "bedrock",
            "region": "us-west-2",
            "base_url": upstream.url,
            "upstream_model": MODEL_ID,
            **fields,
        }
    )


def call(
    dep: Deployment, *, stream: bool = False, body: dict[str, Any] | None = None, **kw: Any
) -> UpstreamCall:
    return UpstreamCall(
        dep,
        Operation.CHAT,
        body if body is not None else {"model": dep.model, "messages": MESSAGES},
        stream=stream,
        credential=kw.pop("credential", "az-key-0123456789" if dep.provider == "azure" else None),
        response_timeout_s=kw.pop("response_timeout_s", 5.0),
        idle_timeout_s=kw.pop("idle_timeout_s", 5.0),
        **{"egress": _egress(dep), **kw},
    )


def _egress(dep: Deployment) -> EgressSettings:
    """Loopback allowed; a bedrock deployment's mock listed as its endpoint, as an owner would."""
    if dep.provider != "bedrock" or dep.base_url is None:
        return LOOPBACK_EGRESS
    return EgressSettings(allow=LOOPBACK_EGRESS.allow, bedrock_endpoints=[dep.base_url])


def text(events: list[StreamEvent]) -> str:
    return "".join(
        e.chunk["choices"][0]["delta"].get("content") or ""
        for e in events
        if e.chunk and e.chunk["choices"]
    )


HANG_S = 60.0  # far past every deadline these tests set: a call still running hangs


async def failure(coro: Any) -> UpstreamFault:
    with pytest.raises(UpstreamFault) as caught:
        async with asyncio.timeout(HANG_S):
            await coro
    return caught.value


# -- azure -----------------------------------------------------------------------


async def test_azure_json_uses_the_deployment_path_version_and_api_key(
    make_upstream: Any, provider_client: UpstreamClient
) -> None:
    upstream = make_upstream("az", api_key="az-key-0123456789")
    answer = await provider_client.send(call(azure(upstream)))
    assert answer.body["choices"][0]["message"]["content"] == "Hello from az! You said: ping"
    assert answer.body["model"] == "my-gpt4o"
    (seen,) = upstream.requests()
    assert seen["path"] == "/openai/deployments/my-gpt4o/chat/completions"
    assert seen["query"] == {"api-version": "2024-10-21"}  # the default
    assert seen["headers"]["api-key"] == "az-key-0123456789"
    assert "authorization" not in seen["headers"]


async def test_azure_entra_tokens_are_bearer_and_streams_count_usage(
    make_upstream: Any, provider_client: UpstreamClient
) -> None:
    upstream = make_upstream("az", api_key="entra-token-0123456789")
    dep = azure(upstream, auth="entra", api_version="2025-01-01-preview")
    stream = await provider_client.open_stream(
        call(dep, stream=True, credential="entra-token-0123456789")
    )
    events: list[StreamEvent] = []
    await drain(stream, events)
    assert text(events) == "Hello from az! You said: ping"
    (seen,) = upstream.requests()
    assert seen["headers"]["authorization"] == "Bearer entra-token-0123456789"
    assert "api-key" not in seen["headers"]
    assert seen["query"] == {"api-version": "2025-01-01-preview"}


async def test_azure_wrong_key_is_a_configuration_failure(
    make_upstream: Any, provider_client: UpstreamClient
) -> None:
    upstream = make_upstream("az", api_key="the-right-key-123")
    caught = await failure(provider_client.send(call(azure(upstream))))
    assert caught.fault.status == 401
    assert classify(caught.fault) is FailureClass.CONFIGURATION
    assert "az-key-0123456789" not in str(caught.fault)


async def test_headers_and_query_maps_reach_the_upstream_and_stay_secret(
    make_upstream: Any, upstream_http: Any
) -> None:
    upstream = make_upstream("oc")
    dep = Deployment.model_validate(
        {
            "id": "oc",
            "model": "m",
            "provider": "openai_compat",
            "base_url": upstream.base_url,
            "upstream_model": "u",
            "headers": {"X-Tenant": "acme", "cf-aig-authorization": "Bearer cf-secret-123456"},
            "query": {"tenant": "acme", "trace": "1"},
        }
    )
    upstream.set_faults([{"status": 400, "error": {"message": "bad header cf-secret-123456"}}])
    caught = await failure(UpstreamClient(upstream_http).send(call(dep)))
    assert "cf-secret-123456" not in str(caught.fault)  # a header value is treated as secret
    (seen,) = upstream.requests()
    assert seen["headers"]["x-tenant"] == "acme"
    assert seen["headers"]["cf-aig-authorization"] == "Bearer cf-secret-123456"
    assert seen["query"] == {"tenant": "acme", "trace": "1"}
    upstream.clear()
    az = azure(upstream, headers={"x-ms-client": "edge"}, query={"extra": "yes"})
    await UpstreamClient(upstream_http).send(call(az))
    (seen,) = upstream.requests()
    assert seen["query"] == {"extra": "yes", "api-version": "2024-10-21"}
    assert seen["headers"]["x-ms-client"] == "edge"


# -- bedrock ---------------------------------------------------------------------


async def test_bedrock_converse_json_is_signed_and_translated(
    make_upstream: Any, provider_client: UpstreamClient
) -> None:
    upstream = make_upstream("br")
    body = {"messages": MESSAGES, "max_tokens": 64, "temperature": 0.2, "stop": ["END"]}
    answer = await provider_client.send(call(bedrock(upstream), body=body))
    choice = answer.body["choices"][0]
    assert choice["message"]["content"] == "Hello from br! You said: ping"
    assert choice["finish_reason"] == "stop"
    assert answer.usage.prompt_tokens > 0
    assert answer.usage.completion_tokens == 6
    assert answer.request_id == "req_mock_br_1"
    (seen,) = upstream.requests()
    assert seen["path"] == "/model/" + MODEL_ID.replace(":", "%3A") + "/converse"
    assert "/us-west-2/bedrock/aws4_request" in seen["headers"]["authorization"]
    assert seen["body"]["system"] == [{"text": "You are terse."}]
    assert seen["body"]["messages"] == [{"role": "user", "content": [{"text": "ping"}]}]
    assert seen["body"]["inferenceConfig"] == {
        "maxTokens": 64,
        "temperature": 0.2,
        "stopSequences": ["END"],
    }


async def test_bedrock_stream_arrives_as_chunks_with_usage(
    make_upstream: Any, provider_client: UpstreamClient
) -> None:
    upstream = make_upstream("br")
    upstream.set_faults([{"chunk_delay_ms": 5}])
    body = {"messages": MESSAGES, "stream_options": {"include_usage": True}}
    stream = await provider_client.open_stream(call(bedrock(upstream), stream=True, body=body))
    events: list[StreamEvent] = []
    await drain(stream, events)
    assert text(events) == "Hello from br! You said: ping"
    assert events[-1].done
    assert stream.complete
    usage_chunk = events[-2].chunk
    assert usage_chunk is not None
    assert usage_chunk["choices"] == []
    assert stream.usage is not None
    assert stream.usage.completion_tokens == 6
    assert upstream.requests()[0]["path"].endswith("/converse-stream")


async def test_bedrock_tool_use_both_ways(
    make_upstream: Any, provider_client: UpstreamClient
) -> None:
    upstream = make_upstream("br")
    tool = {"name": "get_weather", "arguments": {"city": "Paris"}, "id": "tooluse_1"}
    upstream.set_faults([{"tool_call": tool}, {"tool_call": tool}])
    tools = [
        {
            "type": "function",
            "function": {
                "name": "get_weather",
                "description": "Weather by city",
                "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
            },
        }
    ]
    body = {"messages": MESSAGES, "tools": tools, "tool_choice": "required"}
    answer = await provider_client.send(call(bedrock(upstream), body=body))
    choice = answer.body["choices"][0]
    assert choice["finish_reason"] == "tool_calls"
    (tool_call,) = choice["message"]["tool_calls"]
    assert tool_call["function"] == {"name": "get_weather", "arguments": '{"city": "Paris"}'}
    sent = upstream.requests()[0]["body"]["toolConfig"]
    assert sent["toolChoice"] == {"any": {}}
    assert sent["tools"][0]["toolSpec"]["inputSchema"]["json"]["properties"] == {
        "city": {"type": "string"}
    }
    stream = await provider_client.open_stream(call(bedrock(upstream), stream=True, body=body))
    events: list[StreamEvent] = []
    await drain(stream, events)
    deltas = [
        d
        for e in events
        if e.chunk and e.chunk["choices"]
        for d in e.chunk["choices"][0]["delta"].get("tool_calls") or []
    ]
    assert deltas[0]["id"] == "tooluse_1"
    assert deltas[0]["function"]["name"] == "get_weather"
    assert "".join(d["function"]["arguments"] for d in deltas) == '{"city": "Paris"}'
    finish = [
        e.chunk["choices"][0]["finish_reason"] for e in events if e.chunk and e.chunk["choices"]
    ]
    assert finish[-1] == "tool_calls"
    # The result goes back as a user turn of toolResult blocks after the assistant's toolUse.
    history = [
        {"role": "user", "content": "weather?"},
        {"role": "assistant", "content": None, "tool_calls": [tool_call]},
        {"role": "tool", "tool_call_id": tool_call["id"], "content": "18C and sunny"},
    ]
    answer = await provider_client.send(
        call(bedrock(upstream), body={"messages": history, "tools": tools})
    )
    assert (
        answer.body["choices"][0]["message"]["content"] == "Hello from br! You said: 18C and sunny"
    )
    messages = upstream.requests()[-1]["body"]["messages"]
    assert messages[1]["content"] == [
        {"toolUse": {"toolUseId": "tooluse_1", "name": "get_weather", "input": {"city": "Paris"}}}
    ]
    assert messages[2]["content"][0]["toolResult"]["toolUseId"] == "tooluse_1"


@pytest.mark.parametrize(
    ("fault", "status", "cls"),
    [
        ({"status": 429}, 429, FailureClass.THROTTLE),
        ({"status": 400}, 400, FailureClass.REQUEST),
        ({"status": 403}, 403, FailureClass.CONFIGURATION),
        ({"status": 404}, 404, FailureClass.CONFIGURATION),
        ({"status": 500}, 500, FailureClass.TRANSIENT),
        ({"status": 503}, 503, FailureClass.TRANSIENT),
        ({"status": 429, "error": {"code": "ModelNotReadyException"}}, 503, FailureClass.TRANSIENT),
        (
            {"status": 400, "error": {"message": "Input is too long for requested model."}},
            400,
            FailureClass.REQUEST,
        ),
    ],
)
async def test_bedrock_errors_map_to_the_fault_classes(
    make_upstream: Any,
    provider_client: UpstreamClient,
    fault: dict[str, Any],
    status: int,
    cls: FailureClass,
) -> None:
    upstream = make_upstream("br")
    upstream.set_faults([fault])
    caught = await failure(provider_client.send(call(bedrock(upstream))))
    assert (caught.fault.kind, caught.fault.status) == (FaultKind.HTTP, status)
    assert classify(caught.fault) is cls
    assert upstream.url not in str(caught.fault)
    assert len(upstream.requests()) == 1  # botocore retries nothing: routing decides


async def test_bedrock_context_window_errors_take_the_context_chain(
    make_upstream: Any, provider_client: UpstreamClient
) -> None:
    upstream = make_upstream("br")
    upstream.set_faults(
        [{"status": 400, "error": {"message": "Input is too long for requested model."}}]
    )
    caught = await failure(provider_client.send(call(bedrock(upstream))))
    assert caught.fault.code == "context_length_exceeded"


async def test_bedrock_stream_faults(make_upstream: Any, provider_client: UpstreamClient) -> None:
    upstream = make_upstream("br")
    dep = bedrock(upstream)
    upstream.set_faults(
        [
            {"status": 429},
            {"cut_after_chunks": 2},
            {"error_after_chunks": 2, "error": {"code": "throttlingException"}},
            {"malformed_after_chunks": 1},
            {"finish_reason": None, "no_done": True},
        ]
    )
    throttled = await failure(provider_client.open_stream(call(dep, stream=True)))
    assert classify(throttled.fault) is FailureClass.THROTTLE
    for kind, status in (
        (FaultKind.TRUNCATED, None),
        (FaultKind.HTTP, 429),
        (FaultKind.MALFORMED, None),
    ):
        stream = await provider_client.open_stream(call(dep, stream=True))
        caught = await failure(drain(stream, []))
        assert (caught.fault.kind, caught.fault.status) == (kind, status)
    stream = await provider_client.open_stream(call(dep, stream=True))
    caught = await failure(drain(stream, []))
    assert caught.fault.kind is FaultKind.TRUNCATED  # neither a stop reason nor the metadata


async def test_bedrock_deadlines_hold(make_upstream: Any, provider_client: UpstreamClient) -> None:
    # The mock never answers these: only our 0.3 s deadlines can end the calls (botocore's own
    # read timeout is an hour). A deadline that did not hold fails the test at HANG_S instead
    # of hanging it, however slow the machine; no bound on how fast a call must be.
    upstream = make_upstream("br")
    dep = bedrock(upstream)
    # Persistent faults: on a loaded machine a call can time out before the mock has read
    # it, and a queue of one-shot faults would then hand the next call the wrong one.
    upstream.set_faults([], persistent={"stall": True})
    caught = await failure(provider_client.send(call(dep, response_timeout_s=1.0)))
    assert caught.fault.kind is FaultKind.TIMEOUT
    caught = await failure(
        provider_client.open_stream(call(dep, stream=True, response_timeout_s=1.0))
    )
    assert caught.fault.kind is FaultKind.TIMEOUT
    # Headers may take their time on a loaded machine: only the idle deadline is short here.
    upstream.set_faults([], persistent={"stall_after_chunks": 2})
    patient = call(dep, stream=True, response_timeout_s=HANG_S / 2, idle_timeout_s=1.0)
    stream = await provider_client.open_stream(patient)
    caught = await failure(drain(stream, []))
    assert caught.fault.kind is FaultKind.IDLE


async def test_bedrock_refuses_what_converse_cannot_express(
    make_upstream: Any, provider_client: UpstreamClient
) -> None:
    upstream = make_upstream("br")
    link = {"type": "image_url", "image_url": {"url": "https://example.com/cat.png"}}
    for body in (
        {"messages": MESSAGES, "n": 2},
        {"messages": [{"role": "user", "content": [link]}]},
        {"messages": MESSAGES, "response_format": {"type": "json_object"}},
    ):
        caught = await failure(provider_client.send(call(bedrock(upstream), body=body)))
        assert caught.fault.kind is FaultKind.INCOMPATIBLE
    embed = UpstreamCall(bedrock(upstream), Operation.EMBEDDINGS, {"input": "x"})
    caught = await failure(provider_client.send(embed))
    assert caught.fault.kind is FaultKind.INCOMPATIBLE
    assert upstream.requests() == []


async def test_sigv4_is_never_computed_for_a_host_outside_the_bedrock_rule(
    make_upstream: Any, provider_client: UpstreamClient
) -> None:
    # A deployment stored past the config-time check (an older release's document) aims at
    # an unlisted host: the before-sign guard refuses it; nothing is signed or sent.
    upstream = make_upstream("not-bedrock")
    for stream in (False, True):
        unlisted = call(bedrock(upstream), stream=stream, egress=LOOPBACK_EGRESS)
        opening = provider_client.open_stream if stream else provider_client.send
        caught = await failure(opening(unlisted))
        assert caught.fault.kind is FaultKind.CONNECT
        assert "not a Bedrock endpoint" in str(caught)
    assert upstream.requests() == []
    # Listed by the owner, the same mock is signed for and answers.
    answer = await provider_client.send(call(bedrock(upstream)))
    assert answer.status == 200
    assert len(upstream.requests()) == 1


async def test_bedrock_unreachable_endpoint_is_a_connect_failure(
    provider_client: UpstreamClient,
) -> None:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    dep = Deployment.model_validate(
        {
            "id": "br",
            "model": "m",
            "provider": "bedrock",
            "base_url": f"http://127.0.0.1:{port}",
            "upstream_model": MODEL_ID,
        }
    )
    caught = await failure(provider_client.send(call(dep)))
    assert caught.fault.kind is FaultKind.CONNECT


async def test_without_an_aws_session_bedrock_is_the_gateways_failure(
    make_upstream: Any,
) -> None:
    upstream = make_upstream("br")
    async with make_http_client() as http:
        caught = await failure(UpstreamClient(http).send(call(bedrock(upstream))))
    assert caught.fault.kind is FaultKind.GATEWAY
