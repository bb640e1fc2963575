"""The Anthropic adapter end to end against the mock's /v1/messages."""

from __future__ import annotations

import pytest

from edgeproxy.config.deployment import ProviderKind
from edgeproxy.config.policies import Operation
from edgeproxy.errors import UpstreamFault
from edgeproxy.routing.faults import FaultKind
from edgeproxy.upstream.call import StreamEvent, UpstreamCall
from edgeproxy.upstream.client import UpstreamClient
from edgeproxy_dev.mock_upstream import MockUpstream
from tests.integration.upstream.helpers import chat, deployment, drain

ANTHROPIC = ProviderKind.ANTHROPIC


async def test_json(upstream_b: MockUpstream, upstream_client: UpstreamClient) -> None:
    answer = await upstream_client.send(chat(upstream_b, provider=ANTHROPIC))
    (seen,) = upstream_b.requests()
    assert seen["path"] == "/v1/messages"
    assert seen["headers"]["x-api-key"] == "sk-test-credential"
    assert seen["headers"]["anthropic-version"] == "2023-06-01"
    assert "authorization" not in seen["headers"]
    assert seen["body"] == {
        "model": "upstream-model-1",
        "system": "You are terse.",
        "messages": [{"role": "user", "content": [{"type": "text", "text": "ping"}]}],
        "max_tokens": 4096,
    }
    assert answer.body["object"] == "chat.completion"
    assert answer.body["model"] == "upstream-model-1"
    assert answer.body["choices"][0]["message"]["content"] == "Hello from b! You said: ping"
    assert answer.body["choices"][0]["finish_reason"] == "stop"
    assert answer.usage.completion_tokens == 6
    assert answer.rate_limits is not None
    assert answer.rate_limits.remaining_requests == 3999
    assert answer.request_id == "req_mock_b_1"


async def test_stream(upstream_b: MockUpstream, upstream_client: UpstreamClient) -> None:
    events: list[StreamEvent] = []
    async with await upstream_client.open_stream(
        chat(upstream_b, provider=ANTHROPIC, stream=True)
    ) as stream:
        events = [event async for event in stream]
    assert upstream_b.requests()[0]["body"]["stream"] is True
    chunks = [e.chunk for e in events if e.chunk is not None]
    assert chunks[0]["choices"][0]["delta"] == {"role": "assistant", "content": ""}
    assert all(c["model"] == "upstream-model-1" for c in chunks)
    text = "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks)
    assert text == "Hello from b! You said: ping"
    assert chunks[-1]["choices"][0]["finish_reason"] == "stop"
    assert events[-1].done
    assert stream.usage is not None
    assert stream.usage.completion_tokens == 6


async def test_error_answer_in_anthropic_shape(
    upstream_b: MockUpstream, upstream_client: UpstreamClient
) -> None:
    upstream_b.set_faults([{"status": 529, "error": {"message": "Overloaded"}}])
    with pytest.raises(UpstreamFault) as info:
        await upstream_client.send(chat(upstream_b, provider=ANTHROPIC))
    fault = info.value.fault
    assert (fault.status, fault.type, fault.message) == (529, "overloaded_error", "Overloaded")


async def test_cut_stream(upstream_b: MockUpstream, upstream_client: UpstreamClient) -> None:
    upstream_b.set_faults([{"cut_after_chunks": 4}])
    stream = await upstream_client.open_stream(chat(upstream_b, provider=ANTHROPIC, stream=True))
    with pytest.raises(UpstreamFault) as info:
        await drain(stream, [])
    assert info.value.fault.kind is FaultKind.TRUNCATED


async def test_embeddings_are_refused_without_a_request(
    upstream_b: MockUpstream, upstream_client: UpstreamClient
) -> None:
    call = UpstreamCall(deployment(upstream_b, ANTHROPIC), Operation.EMBEDDINGS, {"input": "x"})
    with pytest.raises(UpstreamFault) as info:
        await upstream_client.send(call)
    assert info.value.fault.kind is FaultKind.INCOMPATIBLE
    assert upstream_b.requests() == []
