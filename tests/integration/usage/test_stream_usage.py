"""Usage on every streamed surface when the upstream reports none.

An ``openai_compat`` deployment is not asked for a usage chunk (``stream_usage``
off), so the gateway counts its estimate. Each surface reports that same
estimate, the figures the request log (and so spend and tpm) count: the
Responses API's ``response.completed``, and the legacy ``/v1/completions``
stream's record. (Anthropic's ``message_delta`` takes the same fallback; the
Anthropic surface always asks for a usage chunk, which the mock then sends.)
"""

from __future__ import annotations

import json
from typing import Any

import httpx

from edgeproxy_dev.mock_upstream import MockUpstream
from tests.fixtures.clock import FleetClock
from tests.integration.usage.helpers import ENV, gateway_config, new_key, one_record, priced


def _events(answer: httpx.Response) -> list[dict[str, Any]]:
    out = []
    for line in answer.text.splitlines():
        if line.startswith("data: ") and line != "data: [DONE]":
            out.append(json.loads(line[len("data: ") :]))
    return out


def _streamed(
    start_gateway: Any, clock: FleetClock, upstream: MockUpstream, path: str, body: dict[str, Any]
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """One stream of ``fast-chat`` at ``path`` on a fresh key: its events, and its record."""
    dep = priced("a", upstream, operations=["chat", "completions"])
    gw = start_gateway(gateway_config(dep), env=ENV)
    key = new_key(gw.base_url)["key"]
    answer = httpx.post(
        gw.base_url + path,
        json={"model": "fast-chat", "stream": True, **body},
        headers={"authorization": f"Bearer {key}"},
        timeout=30,
    )
    return _events(answer), one_record(gw.base_url, clock.now())


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


def test_a_streamed_legacy_completion_counts_its_output(
    start_gateway: Any, clock: FleetClock, upstream_a: MockUpstream
) -> None:
    events, record = _streamed(
        start_gateway, clock, upstream_a, "/v1/completions", {"prompt": "Hello!"}
    )
    text = "".join(c["text"] for e in events for c in e.get("choices", []))
    assert text
    assert record["completion_tokens"] == -(-len(text) // 4)  # the estimate: 4 chars a token
