"""Usage on every streamed surface when the upstream reports none.

An ``openai_compat`` deployment is not asked for a usage chunk (``stream_usage``
off), so the gateway counts its estimate. Each surface reports that same
estimate, the figures the request log (and so spend and tpm) count, and says
it is one (``edgeproxy_estimated: true`` in the usage object, ``usage_estimated``
in the log record): the Responses API's ``response.completed``, the usage
chunk a client asked for on chat and legacy ``/v1/completions`` streams, and
Anthropic's ``message_start`` and ``message_delta``. Where a chunk is asked
for and must not come (the Anthropic surface always asks), the mock plays a
server that ignores ``stream_options``. The stock SDKs parse each of them.
"""

from __future__ import annotations

from typing import Any

import anthropic
import httpx
import openai

from edgeproxy_dev.mock_upstream import MockUpstream
from tests.fixtures.clock import FleetClock
from tests.fixtures.sse import sse_payloads
from tests.integration.usage.helpers import ENV, gateway_config, new_key, one_record, priced


def _gateway(start_gateway: Any, upstream: MockUpstream) -> Any:
    dep = priced("a", upstream, operations=["chat", "completions"])
    return start_gateway(gateway_config(dep), env=ENV)


def _streamed(
    start_gateway: Any, clock: FleetClock, upstream: MockUpstream, path: str, body: dict[str, Any]
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """One stream of ``fast-chat`` at ``path`` on a fresh key: its events, and its record."""
    gw = _gateway(start_gateway, upstream)
    key = new_key(gw.base_url)["key"]
    answer = httpx.post(
        gw.base_url + path,
        json={"model": "fast-chat", "stream": True, **body},
        headers={"authorization": f"Bearer {key}"},
        timeout=30,
    )
    return sse_payloads(answer.text), one_record(gw.base_url, clock.now())


def test_a_translated_responses_stream_completes_with_the_counted_usage(
    start_gateway: Any, clock: FleetClock, upstream_a: MockUpstream
) -> None:
    events, record = _streamed(
        start_gateway, clock, upstream_a, "/v1/responses", {"input": "Hello!"}
    )
    [done] = [e for e in events if e.get("type") == "response.completed"]
    usage = done["response"]["usage"]
    assert record["completion_tokens"] > 0
    assert (usage["input_tokens"], usage["output_tokens"]) == (
        record["prompt_tokens"],
        record["completion_tokens"],
    )
    assert usage["edgeproxy_estimated"] is True
    assert record["usage_estimated"] is True


def test_a_streamed_legacy_completion_counts_its_output(
    start_gateway: Any, clock: FleetClock, upstream_a: MockUpstream
) -> None:
    events, record = _streamed(
        start_gateway, clock, upstream_a, "/v1/completions", {"prompt": "Hello!"}
    )
    text = "".join(c["text"] for e in events for c in e.get("choices", []))
    assert text
    assert record["completion_tokens"] == -(-len(text) // 4)  # the estimate: 4 chars a token
    assert record["usage_estimated"] is True
    assert not [e for e in events if e.get("usage")]  # the client asked for none


IGNORES_STREAM_OPTIONS = {"ignore_stream_options": True}


def _counted(record: dict[str, Any]) -> tuple[int, int]:
    return (record["prompt_tokens"], record["completion_tokens"])


def test_a_streamed_legacy_completion_asked_for_usage_gets_the_counted_estimate(
    start_gateway: Any, clock: FleetClock, upstream_a: MockUpstream
) -> None:
    gw = _gateway(start_gateway, upstream_a)
    upstream_a.set_faults([], persistent=IGNORES_STREAM_OPTIONS)
    key = new_key(gw.base_url)["key"]
    with openai.OpenAI(base_url=gw.base_url + "/v1", api_key=key, max_retries=0) as client:
        chunks = list(
            client.completions.create(
                model="fast-chat",
                prompt="Hello!",
                stream=True,
                stream_options={"include_usage": True},
            )
        )
    [usage] = [c.usage for c in chunks if c.usage is not None]
    record = one_record(gw.base_url, clock.now())
    assert record["completion_tokens"] > 0
    assert (usage.prompt_tokens, usage.completion_tokens) == _counted(record)
    assert usage.total_tokens == sum(_counted(record))
    assert (usage.model_extra or {})["edgeproxy_estimated"] is True
    assert record["usage_estimated"] is True
    assert chunks[-1].usage is not None  # after every text chunk, as OpenAI sends it


def test_a_chat_stream_asked_for_usage_gets_the_upstreams_count_unmarked_when_it_sends_one(
    start_gateway: Any, clock: FleetClock, upstream_a: MockUpstream
) -> None:
    gw = _gateway(start_gateway, upstream_a)
    key = new_key(gw.base_url)["key"]
    with openai.OpenAI(base_url=gw.base_url + "/v1", api_key=key, max_retries=0) as client:
        chunks = list(
            client.chat.completions.create(
                model="fast-chat",
                messages=[{"role": "user", "content": "Hello!"}],
                stream=True,
                stream_options={"include_usage": True},
            )
        )
    usages = [c.usage for c in chunks if c.usage is not None]
    assert len(usages) == 1  # the upstream's own chunk, relayed; none added
    record = one_record(gw.base_url, clock.now())
    assert (usages[0].prompt_tokens, usages[0].completion_tokens) == _counted(record)
    assert "edgeproxy_estimated" not in (usages[0].model_extra or {})
    assert record["usage_estimated"] is False


def test_a_chat_stream_from_a_server_that_ignores_stream_options_gets_the_estimate(
    start_gateway: Any, clock: FleetClock, upstream_a: MockUpstream
) -> None:
    gw = _gateway(start_gateway, upstream_a)
    upstream_a.set_faults([], persistent=IGNORES_STREAM_OPTIONS)
    key = new_key(gw.base_url)["key"]
    with openai.OpenAI(base_url=gw.base_url + "/v1", api_key=key, max_retries=0) as client:
        chunks = list(
            client.chat.completions.create(
                model="fast-chat",
                messages=[{"role": "user", "content": "Hello!"}],
                stream=True,
                stream_options={"include_usage": True},
            )
        )
    [usage] = [c.usage for c in chunks if c.usage is not None]
    record = one_record(gw.base_url, clock.now())
    assert record["completion_tokens"] > 0
    assert (usage.prompt_tokens, usage.completion_tokens) == _counted(record)
    assert (usage.model_extra or {})["edgeproxy_estimated"] is True
    assert record["usage_estimated"] is True


def test_an_anthropic_stream_without_an_upstream_usage_chunk_reports_the_counted_estimate(
    start_gateway: Any, clock: FleetClock, upstream_a: MockUpstream
) -> None:
    gw = _gateway(start_gateway, upstream_a)
    upstream_a.set_faults([], persistent=IGNORES_STREAM_OPTIONS)
    key = new_key(gw.base_url)["key"]
    with (
        anthropic.Anthropic(base_url=gw.base_url, api_key=key, max_retries=0) as client,
        client.messages.stream(
            model="fast-chat", max_tokens=64, messages=[{"role": "user", "content": "Hello!"}]
        ) as stream,
    ):
        events = list(stream)
        final = stream.get_final_message()
    assert "stream_options" in upstream_a.requests()[-1]["body"]  # asked, and ignored
    [start] = [e for e in events if e.type == "message_start"]
    [delta] = [e for e in events if e.type == "message_delta"]
    record = one_record(gw.base_url, clock.now())
    assert record["completion_tokens"] > 0
    assert delta.usage.output_tokens == record["completion_tokens"]
    assert delta.usage.input_tokens == record["prompt_tokens"]
    assert (final.usage.input_tokens, final.usage.output_tokens) == _counted(record)
    assert (delta.usage.model_extra or {})["edgeproxy_estimated"] is True
    assert (start.message.usage.model_extra or {})["edgeproxy_estimated"] is True
    assert start.message.usage.input_tokens > 0
    assert record["usage_estimated"] is True


def test_an_anthropic_stream_with_the_upstreams_usage_reports_it_unmarked(
    start_gateway: Any, clock: FleetClock, upstream_a: MockUpstream
) -> None:
    gw = _gateway(start_gateway, upstream_a)
    key = new_key(gw.base_url)["key"]
    with (
        anthropic.Anthropic(base_url=gw.base_url, api_key=key, max_retries=0) as client,
        client.messages.stream(
            model="fast-chat", max_tokens=64, messages=[{"role": "user", "content": "Hello!"}]
        ) as stream,
    ):
        events = list(stream)
    [delta] = [e for e in events if e.type == "message_delta"]
    record = one_record(gw.base_url, clock.now())
    assert (delta.usage.input_tokens, delta.usage.output_tokens) == _counted(record)
    assert "edgeproxy_estimated" not in (delta.usage.model_extra or {})
    assert record["usage_estimated"] is False
