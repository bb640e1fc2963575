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


def _gateway(start_gateway: Any, upstream: MockUpstream) -> Any:
    dep = priced("a", upstream, operations=["chat", "completions"])
    return start_gateway(gateway_config(dep), env=ENV)


def test_a_translated_responses_stream_completes_with_the_counted_usage(
    start_gateway: Any, clock: FleetClock, upstream_a: MockUpstream
) -> None:
    gw = _gateway(start_gateway, upstream_a)
    key = new_key(gw.base_url)["key"]
    answer = httpx.post(
        gw.base_url + "/v1/responses",
        json={"model": "fast-chat", "input": "Hello!", "stream": True},
        headers={"authorization": f"Bearer {key}"},
        timeout=30,
    )
    [done] = [e for e in _events(answer) if e.get("type") == "response.completed"]
    usage = done["response"]["usage"]
    record = one_record(gw.base_url, clock.now())
    assert record["completion_tokens"] > 0
    assert (usage["input_tokens"], usage["output_tokens"]) == (
        record["prompt_tokens"],
        record["completion_tokens"],
    )


def test_a_streamed_legacy_completion_counts_its_output(
    start_gateway: Any, clock: FleetClock, upstream_a: MockUpstream
) -> None:
    gw = _gateway(start_gateway, upstream_a)
    key = new_key(gw.base_url)["key"]
    answer = httpx.post(
        gw.base_url + "/v1/completions",
        json={"model": "fast-chat", "prompt": "Hello!", "stream": True},
        headers={"authorization": f"Bearer {key}"},
        timeout=30,
    )
    text = "".join(c["text"] for e in _events(answer) for c in e.get("choices", []))
    assert text
    record = one_record(gw.base_url, clock.now())
    assert record["completion_tokens"] == -(-len(text) // 4)  # the estimate: 4 chars a token
