"""A stream without a usage chunk counts its prompt as the deployment counts that protocol's.

The gateway learns each deployment's ratio of reported to estimated prompt tokens
per protocol (``service.limits.calibrations``) from the answers that report a
count, and a stream whose upstream reports none counts its prompt by that ratio
(``routing.estimates.tokens.unreported_usage``). The mock counts the serialized
messages (``mock_answers.prompt_tokens``): for many short chat messages about 1.4
times the estimate's bound, for a legacy completion's prompt about the bound.
So one ratio per deployment would over-count the completion; one per protocol
counts each stream's prompt as the JSON answer to the same body did.
"""

from __future__ import annotations

import json
from typing import Any

import httpx

from edgeproxy.routing.estimates.calibration import Calibration
from edgeproxy.routing.estimates.tokens import prompt_bound, unreported_usage
from edgeproxy_dev.mock_upstream import MockUpstream
from tests.fixtures.clock import FleetClock
from tests.integration.usage.helpers import ENV, gateway_config, new_key, priced, records

TURNS = [{"role": ("user", "assistant")[i % 2], "content": "x"} for i in range(11)]
CHAT = {"messages": TURNS, "max_tokens": 8}
TEXT = {"prompt": "word " * 40, "max_tokens": 8}
MESSAGES = {"messages": TURNS, "max_tokens": 8}  # the Anthropic surface's body
SURFACES = [
    ("/v1/chat/completions", CHAT, "prompt_tokens"),
    ("/v1/completions", TEXT, "prompt_tokens"),
    ("/v1/messages", MESSAGES, "input_tokens"),
    ("/v1/responses", {"input": TURNS, "max_output_tokens": 8}, "input_tokens"),
]


def _post(base_url: str, key: str, path: str, body: dict[str, Any]) -> httpx.Response:
    answer = httpx.post(
        base_url + path,
        json={"model": "fast-chat", **body},
        headers={"authorization": f"Bearer {key}"},
        timeout=30,
    )
    assert answer.status_code == 200, answer.text
    return answer


def _reported(answer: httpx.Response, field: str) -> int:
    return int(answer.json()["usage"][field])


def _stream_events(answer: httpx.Response) -> list[dict[str, Any]]:
    lines = answer.text.splitlines()
    return [json.loads(line[6:]) for line in lines if line.startswith("data: {")]


def test_each_protocols_stream_counts_its_prompt_as_its_json_answer_was_counted(
    start_gateway: Any, clock: FleetClock, upstream_a: MockUpstream
) -> None:
    dep = priced("a", upstream_a, operations=["chat", "completions"])
    gw = start_gateway(gateway_config(dep), env=ENV)
    # A server that never sends a usage chunk, however asked (the Anthropic surface asks).
    upstream_a.set_faults([], persistent={"ignore_stream_options": True})
    key = new_key(gw.base_url)["key"]
    seen = 0
    reported: dict[str, int] = {}
    for path, body, field in SURFACES:
        reported[path] = _reported(_post(gw.base_url, key, path, body), field)
        streamed = _post(gw.base_url, key, path, {**body, "stream": True})
        assert _stream_events(streamed)  # a stream, not a JSON answer
        seen += 2
        record = records(gw.base_url, clock.now(), seen)[0]
        assert record["usage_estimated"] is True, (path, record)
        # The JSON answer to the same body taught the ratio: the estimate is its count.
        assert record["prompt_tokens"] == reported[path], (path, record)
    # The shape this test is about: the chat ratio is not the completion's.
    chat_ratio = reported["/v1/chat/completions"] / prompt_bound(CHAT)
    text_ratio = reported["/v1/completions"] / prompt_bound(TEXT)
    assert chat_ratio > 1.3
    assert text_ratio < 1.1
    one_key = unreported_usage(TEXT, "", Calibration(chat_ratio, 1))[0]
    assert one_key > 1.3 * reported["/v1/completions"]  # what a per-deployment key counted
