"""Mid-stream continuation: a stream cut after its commit is finished on a prefill-capable route."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from edgeproxy_dev.mock_answers import pieces, prompt_tokens
from edgeproxy_dev.mock_upstream import MockUpstream
from tests.fixtures.configs import config, deployment
from tests.fixtures.sse import sse_events, stream_text
from tests.fixtures.upstream import CANON
from tests.integration.resilience.helpers import (
    CLIENT_KEY,
    keys,
    model_requests,
    post_chat,
    router,
)

# OpenAI frames: role, then one word each. Anthropic: message_start, block start, ping, words.
CUT = {"cut_after_chunks": 5}  # the client saw "The quick brown fox "
STALL = {"stall_after_chunks": 5}
PREFILL = {"fast-chat": {"continuation": "prefill"}}


def gateway(start_gateway: Any, a: MockUpstream, b: MockUpstream, **b_fields: Any) -> Any:
    return start_gateway(
        config(
            deployment("a", a, priority=1, supports_prefill=True),
            deployment("b", b, **b_fields),
            pools=PREFILL,
            router=router(stream={"idle_ms": 500}),
            gateway=keys(),
        )
    )


def prefills(upstream: MockUpstream) -> list[dict[str, Any]]:
    """The requests ``upstream`` got that end with an assistant turn."""
    return [
        r
        for r in upstream.requests()
        if r["body"] and (r["body"].get("messages") or [{}])[-1].get("role") == "assistant"
    ]


@pytest.mark.parametrize("fault", [CUT, STALL], ids=["cut", "stall"])
def test_a_cut_stream_is_completed_seamlessly_on_a_prefill_capable_deployment(
    start_gateway, canonical_pair, fault: dict[str, Any]
) -> None:
    a, b = canonical_pair
    gw = gateway(start_gateway, a, b, supports_prefill=True)
    a.set_faults([fault])
    answer = post_chat(
        gw.base_url,
        "fast-chat",
        stream=True,
        metadata=True,
        stream_options={"include_usage": True},
    )
    events = sse_events(answer)
    chunks = [e for e in events if isinstance(e, dict) and "choices" in e]
    assert stream_text(events) == CANON
    assert not any("error" in e for e in events if isinstance(e, dict))
    assert events[-1] == "[DONE]"
    roles = [c for e in chunks for c in e["choices"] if "role" in c.get("delta", {})]
    assert len(roles) == 1  # one role event: the continuation's was dropped
    assert len({e["id"] for e in chunks}) == 1  # one answer, one id
    [request] = prefills(b)
    assert request["body"]["messages"][-1] == {
        "role": "assistant",
        "content": "The quick brown fox",
    }
    [usage] = [e["usage"] for e in chunks if e.get("usage")]
    rest = CANON[len("The quick brown fox") :]
    # a was cut before its usage chunk: the total is what each attempt reported.
    assert usage["completion_tokens"] == len(pieces(rest))
    assert usage["prompt_tokens"] == prompt_tokens(request["body"])
    [routing] = [
        e["unified_routing"] for e in events if isinstance(e, dict) and "unified_routing" in e
    ]
    attempts = routing["attempts"]
    assert [(x["deployment"], x["continuation"]) for x in attempts] == [("a", False), ("b", True)]
    assert attempts[0]["error_kind"] == ("truncated" if fault is CUT else "idle")
    assert attempts[1]["usage"] == {
        "prompt_tokens": usage["prompt_tokens"],
        "completion_tokens": usage["completion_tokens"],
    }


@pytest.mark.parametrize("fault", [CUT, STALL], ids=["cut", "stall"])
def test_without_a_capable_target_the_client_gets_the_original_error(
    start_gateway, canonical_pair, fault: dict[str, Any], caplog: pytest.LogCaptureFixture
) -> None:
    a, b = canonical_pair
    gw = gateway(start_gateway, a, b)  # b cannot continue a prefill (and would say 400)
    a.set_faults([fault])
    b.set_faults([], persistent={"reject_prefill": True})
    answer = post_chat(gw.base_url, "fast-chat", stream=True, metadata=True)
    events = sse_events(answer)
    assert stream_text(events) == "The quick brown fox "
    error = events[-1]
    expected = "upstream_stream_truncated" if fault is CUT else "timeout"
    assert error["error"]["code"] == expected
    assert [x["deployment"] for x in error["unified_routing"]["attempts"]] == ["a"]
    assert model_requests(b) == []  # a prefill-rejecting target is never tried
    # The failure after the commit is logged with the routing trace.
    [logged] = [r for r in caplog.records if "stream failed after commit" in r.getMessage()]
    assert logged.unified_routing["attempts"][0]["deployment"] == "a"  # type: ignore[attr-defined]


def test_a_target_that_rejects_the_prefill_never_becomes_the_final_error(
    start_gateway, canonical_pair
) -> None:
    a, b = canonical_pair
    gw = gateway(start_gateway, a, b, supports_prefill=True)  # it claims so, but answers 400
    a.set_faults([CUT])
    b.set_faults([], persistent={"reject_prefill": True})
    events = sse_events(post_chat(gw.base_url, "fast-chat", stream=True))
    assert stream_text(events) == "The quick brown fox "
    assert events[-1]["error"]["code"] == "upstream_stream_truncated"
    assert len(prefills(b)) == 1


def test_continuation_is_off_unless_asked(start_gateway, canonical_pair) -> None:
    a, b = canonical_pair
    gw = start_gateway(
        config(
            deployment("a", a, priority=1),
            deployment("b", b, supports_prefill=True),
            router=router(),
            gateway=keys(),
        )
    )
    a.set_faults([CUT])
    events = sse_events(post_chat(gw.base_url, "fast-chat", stream=True))
    assert events[-1]["error"]["code"] == "upstream_stream_truncated"
    assert model_requests(b) == []


def anthropic_events(response: httpx.Response) -> list[tuple[str, dict[str, Any]]]:
    out = []
    for block in response.text.split("\n\n"):
        lines = dict(line.split(": ", 1) for line in block.splitlines() if ": " in line)
        if "event" in lines:
            out.append((lines["event"], json.loads(lines["data"])))
    return out


def test_a_cut_anthropic_stream_continues_on_the_fallback_chain_with_summed_usage(
    start_gateway, canonical_pair
) -> None:
    a, b = canonical_pair
    gw = start_gateway(
        config(
            deployment("a", a, provider="anthropic"),
            deployment("b", b, model="spare-chat", supports_prefill=True, stream_usage=True),
            fallbacks=[{"model": "fast-chat", "to": ["spare-chat"], "continuation": "prefill"}],
            router=router(),
            gateway=keys(),
        )
    )
    a.set_faults([{"cut_after_chunks": 6}])  # start, block start, ping, "The quick brown "
    answer = httpx.post(
        gw.base_url + "/v1/messages",
        json={
            "model": "fast-chat",
            "max_tokens": 100,
            "stream": True,
            "messages": [{"role": "user", "content": "Hello!"}],
        },
        headers={"x-api-key": CLIENT_KEY},
        timeout=30,
    )
    events = anthropic_events(answer)
    kinds = [kind for kind, _ in events]
    assert kinds.count("message_start") == 1
    assert "error" not in kinds
    assert kinds[-1] == "message_stop"
    text = "".join(
        data["delta"].get("text", "") for kind, data in events if kind == "content_block_delta"
    )
    assert text == CANON
    [first] = model_requests(b)
    assert first["body"]["messages"][-1] == {"role": "assistant", "content": "The quick brown"}
    [delta] = [data for kind, data in events if kind == "message_delta"]
    a_prompt = prompt_tokens(a.requests()[0]["body"])
    rest = CANON[len("The quick brown") :]
    # a reported its input tokens (and 1 output token) at message_start before the cut.
    assert delta["usage"] == {
        "input_tokens": a_prompt + prompt_tokens(first["body"]),
        "output_tokens": 1 + len(pieces(rest)),
    }


def test_the_interactive_preset_continues_a_cut_stream_without_a_pool_setting(
    start_gateway, canonical_pair
) -> None:
    a, b = canonical_pair
    gw = start_gateway(
        config(
            deployment("a", a, priority=1, supports_prefill=True),
            deployment("b", b, supports_prefill=True),
            router={"preset": "interactive", "sticky": {"enabled": False}},
            gateway=keys(),
        )
    )
    a.set_faults([CUT])
    events = sse_events(post_chat(gw.base_url, "fast-chat", stream=True))
    assert stream_text(events) == CANON
    assert not any("error" in e for e in events if isinstance(e, dict))
    assert len(prefills(b)) == 1


def _finish_reasons(events: list[Any]) -> list[str]:
    return [
        c["finish_reason"]
        for e in events
        if isinstance(e, dict)
        for c in e.get("choices", [])
        if c.get("finish_reason")
    ]


def test_a_new_turn_continuation_joins_with_the_space_the_model_would_have_written(
    start_gateway, canonical_pair
) -> None:
    a, b = canonical_pair
    gw = gateway(start_gateway, a, b, supports_prefill=True)
    # a's stream is cut right after "Taylor." (role, five words); b's chat template
    # starts a new turn, as llama-cpp-python's does: a fresh message, no leading space.
    a.set_faults([{"content": "My cat is named Taylor.", "cut_after_chunks": 6}])
    b.set_faults([{"content": "One day she ran far away."}])
    events = sse_events(post_chat(gw.base_url, "fast-chat", stream=True))
    assert stream_text(events) == "My cat is named Taylor. One day she ran far away."
    assert _finish_reasons(events) == ["stop"]
    [request] = prefills(b)
    assert request["body"]["messages"][-1]["content"] == "My cat is named Taylor."


def test_the_continuation_asks_for_what_is_left_of_max_tokens_counting_short_tokens(
    start_gateway, canonical_pair
) -> None:
    a, b = canonical_pair
    gw = gateway(start_gateway, a, b, supports_prefill=True)
    # Eight one-letter words (16 characters) were delivered: 8 tokens, not 16 / 4.
    a.set_faults([{"content": "a b c d e f g h i j k l", "cut_after_chunks": 9}])
    b.set_faults([{"content": "Then it rained all day long.", "obey_max_tokens": True}])
    events = sse_events(post_chat(gw.base_url, "fast-chat", stream=True, max_tokens=12))
    [request] = prefills(b)
    assert request["body"]["max_tokens"] == 4
    text = stream_text(events)
    assert text == "a b c d e f g h Then it rained all "
    assert len(pieces(text)) <= 12  # the mock's tokens: one a word
    assert _finish_reasons(events) == ["length"]


def test_a_cut_with_max_tokens_used_up_ends_by_length_without_another_call(
    start_gateway, canonical_pair
) -> None:
    a, b = canonical_pair
    gw = gateway(start_gateway, a, b, supports_prefill=True)
    a.set_faults([{"content": "a b c d e f g h i j k l", "cut_after_chunks": 9}])
    events = sse_events(post_chat(gw.base_url, "fast-chat", stream=True, max_tokens=8))
    assert stream_text(events) == "a b c d e f g h "
    assert _finish_reasons(events) == ["length"]
    assert not any("error" in e for e in events if isinstance(e, dict))
    assert events[-1] == "[DONE]"
    assert model_requests(b) == []


def test_a_cut_anthropic_stream_at_max_tokens_ends_with_max_tokens_and_the_estimate(
    start_gateway, canonical_pair
) -> None:
    a, b = canonical_pair
    gw = start_gateway(
        config(
            deployment("a", a, provider="anthropic"),
            deployment("b", b, model="spare-chat", supports_prefill=True),
            fallbacks=[{"model": "fast-chat", "to": ["spare-chat"], "continuation": "prefill"}],
            router=router(),
            gateway=keys(),
        )
    )
    a.set_faults([{"cut_after_chunks": 6}])  # start, block start, ping, "The quick brown "
    answer = httpx.post(
        gw.base_url + "/v1/messages",
        json={
            "model": "fast-chat",
            "max_tokens": 4,  # "The quick brown " is 16 characters: 4 tokens by the estimate
            "stream": True,
            "messages": [{"role": "user", "content": "Hello!"}],
        },
        headers={"x-api-key": CLIENT_KEY},
        timeout=30,
    )
    events = anthropic_events(answer)
    kinds = [kind for kind, _ in events]
    assert "error" not in kinds
    assert kinds[-1] == "message_stop"
    [delta] = [data for kind, data in events if kind == "message_delta"]
    assert delta["delta"]["stop_reason"] == "max_tokens"
    # a reported its input (and 1 output token) at message_start; the output is the
    # estimate, and the usage says so.
    assert delta["usage"] == {
        "input_tokens": prompt_tokens(a.requests()[0]["body"]),
        "output_tokens": 4,
        "edgeproxy_estimated": True,
    }
    assert model_requests(b) == []
