"""Stream rules: commit point, in-band errors, idle deadline, completeness anomalies."""

from __future__ import annotations

import openai
import pytest

from edgeproxy_dev.mock_upstream import MockUpstream
from tests.fixtures.configs import config, deployment
from tests.fixtures.sse import sse_events, stream_text
from tests.integration.resilience.helpers import (
    HELLO,
    keys,
    model_requests,
    post_chat,
    router,
)

FULL = "Hello from {}! You said: Hello!"
BAD_EVENT = '{"choices": [{"delta":'  # what the mock sends as its malformed event


@pytest.fixture
def pair(failover_gateway, upstream_a: MockUpstream, upstream_b: MockUpstream):
    """A gateway over a (preferred) and b, with a 500 ms idle deadline."""
    return failover_gateway(
        router=router(stream={"idle_ms": 500}),
        gateway=keys(),
    )


@pytest.fixture
def single(start_gateway, upstream_a: MockUpstream):
    """A gateway over a alone, with a 500 ms idle deadline."""
    return start_gateway(
        config(
            deployment("a", upstream_a),
            router=router(stream={"idle_ms": 500, "max_attempts": 2}),
            gateway=keys(),
        )
    )


def test_failure_before_commit_fails_over_silently(pair, upstream_a: MockUpstream) -> None:
    # The first frame (role only) shows the client nothing: the stream is not committed yet.
    faults = [{"cut_after_chunks": 1}, {"stall_after_chunks": 1}, {"malformed_after_chunks": 1}]
    for number, fault in enumerate(faults, start=1):
        upstream_a.set_faults([fault])
        answer = post_chat(pair.base_url, "fast-chat", stream=True)
        assert answer.status_code == 200, fault
        events = sse_events(answer)
        assert stream_text(events) == FULL.format("b"), fault
        assert {e["id"] for e in events if isinstance(e, dict)} == {f"chatcmpl-mock-b-{number}"}
        assert BAD_EVENT not in answer.text
        assert events[-1] == "[DONE]"
        assert len(model_requests(upstream_a)) == number


def test_cut_after_commit_ends_with_an_in_band_error(single, sdk, upstream_a: MockUpstream) -> None:
    upstream_a.set_faults([{"cut_after_chunks": 3}])
    seen: list[str] = []
    stream = sdk(single.base_url).chat.completions.create(
        model="fast-chat", messages=HELLO, stream=True
    )
    with pytest.raises(openai.APIError) as caught:
        seen.extend(chunk.choices[0].delta.content or "" for chunk in stream)
    assert "".join(seen) == "Hello from "  # what was shown stays; no success follows it
    assert caught.value.code == "upstream_stream_truncated"
    assert len(model_requests(upstream_a)) == 1  # committed: never retried


def test_stall_after_commit_is_detected_at_idle_ms(single, sdk, upstream_a: MockUpstream) -> None:
    upstream_a.set_faults([{"stall_after_chunks": 3}])
    answer = post_chat(single.base_url, "fast-chat", stream=True, metadata=True)
    events = sse_events(answer)
    assert stream_text(events) == "Hello from "
    assert events[-1]["error"]["code"] == "timeout"
    assert "[DONE]" not in events
    # The idle deadline ended it (the total deadline's kind would be "timeout"), after idle_ms.
    [attempt] = events[-1]["unified_routing"]["attempts"]
    assert (attempt["deployment"], attempt["error_kind"]) == ("a", "idle")
    assert answer.elapsed.total_seconds() >= 0.5
    # The gateway is healthy afterwards: the next request is served in full.
    chunks = list(
        sdk(single.base_url).chat.completions.create(model="fast-chat", messages=HELLO, stream=True)
    )
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == FULL.format(
        "a"
    )


def test_malformed_tenth_event_is_skipped_and_the_stream_completes(
    single, upstream_a: MockUpstream
) -> None:
    # "Hello from a! You said: Hello!" is 1 role + 6 content + 1 finish event: pad it.
    long = " ".join(f"w{i}" for i in range(12))
    upstream_a.set_faults([{"malformed_after_chunks": 9, "content": long}])
    answer = post_chat(single.base_url, "fast-chat", stream=True, metadata=True)
    events = sse_events(answer)
    assert BAD_EVENT not in answer.text  # not relayed
    assert stream_text(events) == long  # not fatal: every other event arrived
    assert events[-1] == "[DONE]"
    assert not any("error" in e for e in events if isinstance(e, dict))
    [routing] = [e["unified_routing"] for e in events[:-1] if "unified_routing" in e]
    assert routing["attempts"][-1]["anomalies"] == ["malformed_event"]
    assert len(model_requests(upstream_a)) == 1


def test_malformed_json_answer_is_transient(pair, sdk, upstream_a: MockUpstream) -> None:
    upstream_a.set_faults([], persistent={"malformed_after_chunks": 0})
    answer = sdk(pair.base_url).chat.completions.create(model="fast-chat", messages=HELLO)
    assert answer.choices[0].message.content == FULL.format("b")


def test_stream_without_done_is_a_complete_answer(single, upstream_a: MockUpstream) -> None:
    upstream_a.set_faults([{"no_done": True}])
    answer = post_chat(single.base_url, "fast-chat", stream=True, metadata=True)
    events = sse_events(answer)
    assert stream_text(events) == FULL.format("a")
    assert events[-1] == "[DONE]"  # the client gets a well-formed stream
    [routing] = [e["unified_routing"] for e in events[:-1] if "unified_routing" in e]
    assert routing["attempts"][-1]["anomalies"] == ["missing_done"]
    assert len(model_requests(upstream_a)) == 1  # an anomaly is never retried


def test_done_without_finish_reason_infers_stop(single, sdk, upstream_a: MockUpstream) -> None:
    upstream_a.set_faults([{"finish_reason": None}])
    chunks = list(
        sdk(single.base_url).chat.completions.create(model="fast-chat", messages=HELLO, stream=True)
    )
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == FULL.format("a")
    reasons = [c.choices[0].finish_reason for c in chunks if c.choices]
    assert reasons[-1] == "stop"
    assert len(model_requests(upstream_a)) == 1


def test_empty_answer_is_an_answer(single, upstream_a: MockUpstream) -> None:
    upstream_a.set_faults([{"content": "", "no_done": True}])
    answer = post_chat(single.base_url, "fast-chat", stream=True, metadata=True)
    events = sse_events(answer)
    assert stream_text(events) == ""
    reasons = [c["finish_reason"] for e in events[:-1] for c in e["choices"]]
    assert reasons[-1] == "stop"
    [routing] = [e["unified_routing"] for e in events[:-1] if "unified_routing" in e]
    assert routing["attempts"][-1]["anomalies"] == ["missing_done", "empty"]
    assert len(model_requests(upstream_a)) == 1


def test_stream_opens_after_the_header_hold_and_keeps_routing(
    start_gateway, upstream_a: MockUpstream
) -> None:
    gw = start_gateway(
        config(
            deployment("a", upstream_a),
            router=router(stream={"max_attempts": 2}, stream_header_hold_ms=200),
            gateway=keys(),
        )
    )
    # The retry's backoff outlasts the 200 ms hold: the stream opens and keepalives hold it.
    upstream_a.set_faults([{"status": 500}])
    answer = post_chat(gw.base_url, "fast-chat", stream=True)
    assert answer.status_code == 200
    assert answer.text.startswith(": keepalive")
    assert stream_text(sse_events(answer)) == FULL.format("a")
    # Once the stream is open, a pool failure can only be told in-band.
    upstream_a.set_faults([], persistent={"status": 500})
    failed = post_chat(gw.base_url, "fast-chat", stream=True)
    assert failed.status_code == 200
    events = sse_events(failed)
    assert events == [{"error": events[0]["error"]}]
    assert events[0]["error"]["message"] == "The server had an error while processing your request."
