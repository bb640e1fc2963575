"""The OpenAI adapter: body passthrough, auth header, chunk parsing."""

from __future__ import annotations

import pytest

from edgeproxy.config.deployment import Deployment, ProviderKind
from edgeproxy.config.policies import Operation
from edgeproxy.errors import UpstreamFault
from edgeproxy.routing.faults import FaultKind
from edgeproxy.upstream.call import DONE, UpstreamCall
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
