"""The OpenAI adapter: body passthrough, auth header, chunk parsing."""

from __future__ import annotations

import json
from typing import Any

import pytest

from edgeproxy.config.deployment import Deployment, ProviderKind
from edgeproxy.config.policies import Operation
from edgeproxy.errors import UpstreamFault
from edgeproxy.routing.faults import FaultKind
from edgeproxy.upstream.call import DONE, UpstreamCall, Usage
from edgeproxy.upstream.openai import OpenAIAdapter, OpenAIChunks
from edgeproxy.upstream.sse import ServerSentEvent

DEPLOYMENT = Deployment(
    id="oa",
    model="gpt-4o",
    provider=ProviderKind.OPENAI,
    base_url="https://api.openai.com/v1",
    upstream_model="gpt-4o-2024-08-06",
)


def test_body_keeps_every_field_but_the_model() -> None:
    body = {"model": "gpt-4o", "messages": [], "x_vendor": {"a": [1]}, "seed": 7}
    call = UpstreamCall(DEPLOYMENT, Operation.CHAT, body, credential="sk-abc")
    prepared = OpenAIAdapter().prepare(call)
    assert prepared.body == {**body, "model": "gpt-4o-2024-08-06"}
    assert body["model"] == "gpt-4o"  # the caller's body is not mutated
    assert prepared.path == "/chat/completions"
    assert prepared.headers["authorization"] == "Bearer sk-abc"


def test_stream_flag_follows_the_call() -> None:
    adapter = OpenAIAdapter()
    streaming = UpstreamCall(DEPLOYMENT, Operation.CHAT, {"messages": []}, stream=True)
    assert adapter.prepare(streaming).body["stream"] is True
    json_call = UpstreamCall(DEPLOYMENT, Operation.CHAT, {"messages": [], "stream": True})
    assert adapter.prepare(json_call).body["stream"] is False
    assert "stream" not in adapter.prepare(UpstreamCall(DEPLOYMENT, Operation.CHAT, {})).body


def test_embeddings_path_and_no_credential() -> None:
    call = UpstreamCall(DEPLOYMENT, Operation.EMBEDDINGS, {"input": "x"})
    prepared = OpenAIAdapter().prepare(call)
    assert prepared.path == "/embeddings"
    assert "authorization" not in prepared.headers


def test_other_operations_are_incompatible() -> None:
    with pytest.raises(UpstreamFault) as info:
        OpenAIAdapter().prepare(UpstreamCall(DEPLOYMENT, Operation.IMAGES, {}))
    assert info.value.fault.kind is FaultKind.INCOMPATIBLE


def test_chunks() -> None:
    chunks = OpenAIChunks([])
    (event,) = chunks.feed(ServerSentEvent(data='{"choices": [], "model": "m"}'))
    assert event.chunk == {"choices": [], "model": "m"}
    assert chunks.feed(ServerSentEvent(data="[DONE]")) == [DONE]
    chunks.feed(ServerSentEvent(data='{"choices": [], "usage": {"prompt_tokens": 3}}'))
    assert chunks.usage is not None
    assert (chunks.usage.prompt_tokens, chunks.usage.completion_tokens) == (3, 0)


@pytest.mark.parametrize(
    ("data", "kind"),
    [
        ("{nope", FaultKind.MALFORMED),
        ("[1]", FaultKind.MALFORMED),
        ('{"error": {"message": "boom"}}', FaultKind.HTTP),
    ],
)
def test_bad_chunks(data: str, kind: FaultKind) -> None:
    with pytest.raises(UpstreamFault) as info:
        OpenAIChunks([]).feed(ServerSentEvent(data=data))
    assert info.value.fault.kind is kind


def test_a_calls_repr_never_shows_its_credential() -> None:
    from edgeproxy.config.deployment import Deployment
    from edgeproxy.config.policies import Operation
    from edgeproxy.upstream.call import UpstreamCall

    dep = Deployment(
        id="d", model="m", provider="openai", base_url="http://127.0.0.1:1/v1", upstream_model="u"
    )
    call = UpstreamCall(dep, Operation.CHAT, {"model": "m"}, credential="sk-secret-value")
    assert "sk-secret-value" not in repr(call)


def _sse(payload: dict[str, Any]) -> ServerSentEvent:
    return ServerSentEvent(data=json.dumps(payload), event=str(payload["type"]))


def test_responses_calls_go_to_the_responses_path_as_sent() -> None:
    dep = Deployment(
        id="n",
        model="m",
        provider=ProviderKind.OPENAI,
        base_url="https://api.example.com/v1",
        upstream_model="gpt-x",
        operations=frozenset({Operation.CHAT, Operation.RESPONSES}),
    )
    body = {"model": "m", "input": "hi", "previous_response_id": "resp_1"}
    call = UpstreamCall(deployment=dep, operation=Operation.RESPONSES, body=body, stream=True)
    prepared = OpenAIAdapter().prepare(call)
    assert prepared.path == "/responses"
    assert prepared.body == {**body, "model": "gpt-x", "stream": True}


def test_responses_events_pass_through_with_their_usage_and_failures_raise() -> None:
    chunks = OpenAIAdapter().translator(0, [])
    created = {"type": "response.created", "response": {"id": "r", "usage": None}}
    usage = {"input_tokens": 4, "output_tokens": 2, "total_tokens": 6}
    completed = {"type": "response.completed", "response": {"id": "r", "usage": usage}}
    assert [e.chunk for e in chunks.feed(_sse(created))] == [created]
    assert [e.chunk for e in chunks.feed(_sse(completed))] == [completed]
    assert chunks.usage == Usage(4, 2)
    assert chunks.feed(ServerSentEvent(data="[DONE]")) == []  # the terminal event ends it
    for failed in (
        {"type": "error", "code": "server_error", "message": "boom", "param": None},
        {"type": "response.failed", "response": {"error": {"code": "x", "message": "boom"}}},
    ):
        with pytest.raises(UpstreamFault) as caught:
            OpenAIAdapter().translator(0, []).feed(_sse(failed))
        assert caught.value.fault.kind is FaultKind.HTTP
        assert caught.value.fault.message == "boom"
