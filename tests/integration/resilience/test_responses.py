"""The Responses API keeps every rule of the chat surface: failover, commit, in-band errors.

Each pool mixes a native deployment (``operations: [chat, responses]``, sent
``/v1/responses``) and a translated one (sent ``/v1/chat/completions``), so
failover also crosses between the two ways of serving the request.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import openai
import pytest

from edgeproxy_dev.mock_upstream import MockUpstream
from tests.fixtures.configs import config, deployment
from tests.integration.resilience.helpers import keys, router

FULL = "Hello from {}! You said: Hello!"
NATIVE = {"provider": "openai", "operations": ["chat", "responses"]}


def native_first(a: MockUpstream, b: MockUpstream) -> dict[str, Any]:
    return config(
        deployment("a", a, priority=1, **NATIVE),
        deployment("b", b),
        router=router(),
        gateway=keys(),
    )


def translated_first(a: MockUpstream, b: MockUpstream) -> dict[str, Any]:
    return config(
        deployment("a", a, priority=1),
        deployment("b", b, **NATIVE),
        router=router(),
        gateway=keys(),
    )


LAYOUTS = {"native-first": native_first, "translated-first": translated_first}


def model_requests(upstream: MockUpstream) -> list[dict[str, Any]]:
    """The upstream's model requests, native or translated."""
    return [r for r in upstream.requests() if r["method"] == "POST"]


def events_of(client: openai.OpenAI, **body: Any) -> list[Any]:
    return list(client.responses.create(model="fast-chat", input="Hello!", stream=True, **body))


def deltas(events: list[Any]) -> str:
    return "".join(e.delta for e in events if e.type == "response.output_text.delta")


@pytest.mark.parametrize("layout", LAYOUTS)
def test_a_500_fails_over_before_anything_was_sent(
    layout: str,
    start_gateway,
    sdk: Callable[[str], openai.OpenAI],
    upstream_a: MockUpstream,
    upstream_b: MockUpstream,
) -> None:
    client = sdk(start_gateway(LAYOUTS[layout](upstream_a, upstream_b)).base_url)
    upstream_a.set_faults([{"status": 500}, {"status": 500}])

    answer = client.responses.create(model="fast-chat", input="Hello!")
    assert answer.output_text == FULL.format("b")
    assert answer.status == "completed"

    events = events_of(client)
    assert deltas(events) == FULL.format("b")
    assert events[-1].type == "response.completed"
    assert [r["body"]["model"] for r in model_requests(upstream_a)] == ["mock-small"] * 2
    assert len(model_requests(upstream_b)) == 2


@pytest.mark.parametrize(
    ("layout", "cut"),
    [("native-first", 2), ("translated-first", 1)],  # created + in_progress / the role chunk
)
def test_a_stream_cut_before_its_first_delta_fails_over_silently(
    layout: str,
    cut: int,
    start_gateway,
    sdk: Callable[[str], openai.OpenAI],
    upstream_a: MockUpstream,
    upstream_b: MockUpstream,
) -> None:
    client = sdk(start_gateway(LAYOUTS[layout](upstream_a, upstream_b)).base_url)
    upstream_a.set_faults([{"cut_after_chunks": cut}])
    events = events_of(client)
    assert deltas(events) == FULL.format("b")
    assert [e.type for e in events].count("response.created") == 1
    assert events[-1].type == "response.completed"


@pytest.mark.parametrize(
    ("layout", "cut", "shown"),
    [("native-first", 6, "Hello from "), ("translated-first", 3, "Hello from ")],
)
def test_a_stream_cut_after_its_first_delta_ends_with_an_in_band_failure(
    layout: str,
    cut: int,
    shown: str,
    start_gateway,
    sdk: Callable[[str], openai.OpenAI],
    upstream_a: MockUpstream,
    upstream_b: MockUpstream,
) -> None:
    client = sdk(start_gateway(LAYOUTS[layout](upstream_a, upstream_b)).base_url)
    upstream_a.set_faults([{"cut_after_chunks": cut}])
    events = events_of(client)
    kinds = [e.type for e in events]
    assert deltas(events) == shown
    assert kinds[-2:] == ["error", "response.failed"]  # never a silent success
    assert "response.completed" not in kinds
    failed = events[-1].response
    assert failed.status == "failed"
    assert failed.error is not None
    assert "ended before" in failed.error.message
    assert "ended before" in events[-2].message
    assert model_requests(upstream_b) == []  # committed: no second deployment


def test_a_native_stream_without_its_terminal_event_is_incomplete(
    start_gateway,
    sdk: Callable[[str], openai.OpenAI],
    upstream_a: MockUpstream,
    upstream_b: MockUpstream,
) -> None:
    # Every delta and item arrived, but never response.completed: the judge says truncated.
    client = sdk(start_gateway(native_first(upstream_a, upstream_b)).base_url)
    upstream_a.set_faults([{"no_done": True}])
    events = events_of(client)
    assert deltas(events) == FULL.format("a")
    assert [e.type for e in events][-2:] == ["error", "response.failed"]


def test_native_response_ids_and_usage_reach_the_client(
    start_gateway,
    sdk: Callable[[str], openai.OpenAI],
    upstream_a: MockUpstream,
    upstream_b: MockUpstream,
) -> None:
    client = sdk(start_gateway(native_first(upstream_a, upstream_b)).base_url)
    events = events_of(client)
    assert events[0].response.id == "resp_mock_a_1"
    done = events[-1].response
    assert done.id == "resp_mock_a_1"
    assert done.usage is not None
    assert done.usage.output_tokens > 0
    [seen] = model_requests(upstream_a)
    assert seen["path"] == "/v1/responses"
    assert "stream_options" not in seen["body"]  # a chat-only knob; Responses streams carry usage
