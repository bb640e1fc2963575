"""``POST /v1/completions`` (legacy text completions) through the stock openai SDK."""

from __future__ import annotations

from typing import Any

import httpx
import openai
import pytest

from edgeproxy_dev.mock_upstream import MockUpstream
from tests.fixtures.configs import config, deployment
from tests.fixtures.gateway import GatewayServer
from tests.integration.resilience.helpers import router

SERVES = ["chat", "completions"]


def completion_requests(upstream: MockUpstream) -> list[dict[str, Any]]:
    return [r for r in upstream.requests() if r["path"] == "/v1/completions"]


def sdk(gateway: GatewayServer) -> openai.OpenAI:
    return openai.OpenAI(base_url=gateway.base_url + "/v1", api_key="sk-caller", max_retries=0)


@pytest.fixture
def pair(start_gateway, upstream_a: MockUpstream, upstream_b: MockUpstream) -> GatewayServer:
    """``a`` (higher priority) and ``b`` both serve completions."""
    return start_gateway(
        config(
            deployment("a", upstream_a, priority=1, operations=SERVES, supports_prefill=True),
            deployment("b", upstream_b, operations=SERVES, supports_prefill=True),
            pools={"fast-chat": {"continuation": "prefill"}},
            router=router(),
        )
    )


def test_json_completion(pair: GatewayServer, upstream_a: MockUpstream) -> None:
    answer = sdk(pair).completions.create(
        model="fast-chat", prompt="Say this is a test", max_tokens=7
    )
    assert answer.object == "text_completion"
    assert answer.choices[0].text == "Hello from a! You said: Say this is a test"
    assert answer.choices[0].finish_reason == "stop"
    assert answer.usage is not None
    assert answer.usage.completion_tokens > 0
    [seen] = completion_requests(upstream_a)
    assert seen["body"]["model"] == "mock-small"
    assert seen["body"]["prompt"] == "Say this is a test"
    assert seen["body"]["max_tokens"] == 7


def test_streamed_completion(pair: GatewayServer, upstream_a: MockUpstream) -> None:
    chunks = list(
        sdk(pair).completions.create(
            model="fast-chat",
            prompt="Hi",
            stream=True,
            stream_options={"include_usage": True},
        )
    )
    text = "".join(c.choices[0].text for c in chunks if c.choices)
    assert text == "Hello from a! You said: Hi"
    assert len(chunks) > 3
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "stop"
    assert chunks[-1].usage is not None
    assert chunks[-1].usage.completion_tokens > 0


def test_failover_before_commit_json_and_stream(
    pair: GatewayServer, upstream_a: MockUpstream, upstream_b: MockUpstream
) -> None:
    upstream_a.set_faults([{"status": 503}, {"cut_after_chunks": 0}])
    client = sdk(pair)
    answer = client.completions.create(model="fast-chat", prompt="Hi")
    assert answer.choices[0].text.startswith("Hello from b!")
    streamed = "".join(
        c.choices[0].text
        for c in client.completions.create(model="fast-chat", prompt="Hi", stream=True)
        if c.choices
    )
    assert streamed == "Hello from b! You said: Hi"
    assert len(completion_requests(upstream_a)) == 2
    assert len(completion_requests(upstream_b)) == 2


def test_a_cut_after_commit_ends_in_band_and_is_never_continued(
    pair: GatewayServer, upstream_a: MockUpstream, upstream_b: MockUpstream
) -> None:
    # The pool continues cut chat streams by prefill; a completion has no messages to
    # prefill, so it ends with the in-band error as any committed stream would.
    upstream_a.set_faults([{"cut_after_chunks": 2}])
    seen: list[str] = []
    stream = sdk(pair).completions.create(model="fast-chat", prompt="Hi", stream=True)
    with pytest.raises(openai.APIError) as caught:
        seen.extend(c.choices[0].text for c in stream if c.choices)
    assert "".join(seen) == "Hello from "
    assert caught.value.code == "upstream_stream_truncated"
    assert len(completion_requests(upstream_a)) == 1
    assert completion_requests(upstream_b) == []


def test_only_deployments_that_serve_completions_are_asked(
    start_gateway, upstream_a: MockUpstream, upstream_b: MockUpstream
) -> None:
    gw = start_gateway(
        config(
            deployment("chat-only", upstream_a, priority=1),  # default: chat and embeddings
            deployment("both", upstream_b, operations=SERVES),
            deployment("chat-pool", upstream_a, model="only-chat"),
            router=router(),
        )
    )
    client = sdk(gw)
    for _ in range(3):
        answer = client.completions.create(model="fast-chat", prompt="Hi")
        assert answer.choices[0].text.startswith("Hello from b!")
    assert completion_requests(upstream_a) == []
    # A pool where nothing serves completions: 404 naming the model and operation.
    with pytest.raises(openai.NotFoundError) as caught:
        client.completions.create(model="only-chat", prompt="Hi")
    assert caught.value.status_code == 404
    assert caught.value.code == "operation_not_supported"
    assert "`only-chat`" in caught.value.message


def test_bad_prompts_are_clear_400s(pair: GatewayServer) -> None:
    url = pair.base_url + "/v1/completions"
    for body in (
        {"model": "fast-chat"},
        {"model": "fast-chat", "prompt": 5},
        {"model": "fast-chat", "prompt": []},
        {"model": "fast-chat", "prompt": ["a", 1]},
        {"model": "fast-chat", "prompt": "x", "stream": "yes"},
    ):
        answer = httpx.post(url, json=body)
        assert answer.status_code == 400, body
        assert answer.json()["error"]["type"] == "invalid_request_error"
    tokens = httpx.post(url, json={"model": "fast-chat", "prompt": [[1, 2], [3]]})
    assert tokens.status_code == 200


def test_a_stream_without_finish_reason_is_completed_as_text(
    pair: GatewayServer, upstream_a: MockUpstream
) -> None:
    upstream_a.set_faults([{"finish_reason": None}])
    chunks = list(sdk(pair).completions.create(model="fast-chat", prompt="Hi", stream=True))
    assert "".join(c.choices[0].text for c in chunks if c.choices) == "Hello from a! You said: Hi"
    last = chunks[-1].choices[0]
    assert (last.text, last.finish_reason) == ("", "stop")  # inferred at [DONE], as text
