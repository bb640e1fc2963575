"""Hostile upstreams: huge, endless, NaN and echoing answers are bounded or refused.

Deployment ``a`` (priority 1) misbehaves; ``b`` is healthy. Each case must end
in a valid answer in the surface's protocol (served by ``b`` when ``a`` fails
before anything was relayed) or a clean error, never a 500; the in-flight
counts return to 0; other requests are served meanwhile.
"""

from __future__ import annotations

import threading
import time
from typing import Any

import httpx
import pytest

from edgeproxy import strict_json
from edgeproxy_dev.mock_upstream import MockUpstream
from edgeproxy_dev.runner import MOCK_KEY
from tests.fixtures.failover import failover_pair
from tests.fixtures.gateway import GatewayServer
from tests.fixtures.sse import sse_payloads
from tests.fixtures.table import TableView
from tests.integration.hardening.helpers import (
    CHAT,
    MESSAGES,
    anthropic_error,
    config,
    deployment,
    fast_router,
    openai_error,
    wait_idle,
)

MiB = 1024 * 1024
LIMITS = {"answer_bytes": MiB, "event_bytes": 64 * 1024, "stream_bytes": 4 * MiB}
STREAM = {**CHAT, "stream": True}


def hostile_pair(upstream_a: MockUpstream, upstream_b: MockUpstream) -> dict[str, Any]:
    return config(
        *failover_pair(upstream_a, upstream_b),
        router=fast_router(),
        gateway={"upstream_limits": LIMITS},
    )


@pytest.fixture
def pair(start_gateway, upstream_a: MockUpstream, upstream_b: MockUpstream) -> GatewayServer:  # type: ignore[no-untyped-def]
    return start_gateway(hostile_pair(upstream_a, upstream_b))


JSON_CASES = [
    {"huge_json_bytes": 200 * MiB},
    {"endless_json": True},
    {"nan": True},
]
STREAM_CASES = [
    {"long_line_bytes": 4 * MiB},
    {"data_lines_bytes": 64 * MiB},
    {"nan": True},
]


def test_hostile_json_answers_fail_over_to_a_healthy_deployment(
    pair: GatewayServer, upstream_a: MockUpstream, table: TableView
) -> None:
    with httpx.Client(base_url=pair.base_url, timeout=30) as client:
        for case in JSON_CASES:
            upstream_a.set_faults([case])
            chat = client.post("/v1/chat/completions", json=CHAT)
            assert chat.status_code == 200, (case, chat.text)
            assert chat.headers["x-edgeproxy-deployment"] == "b"
            strict_json.loads(chat.content)
            upstream_a.set_faults([case])
            message = client.post("/v1/messages", json=MESSAGES)
            assert message.status_code == 200, (case, message.text)
            assert message.json()["type"] == "message"
            wait_idle(table, "a", "b")


def test_hostile_streams_fail_over_before_anything_was_relayed(
    pair: GatewayServer, upstream_a: MockUpstream, table: TableView
) -> None:
    with httpx.Client(base_url=pair.base_url, timeout=30) as client:
        for case in STREAM_CASES:
            upstream_a.set_faults([case])
            answer = client.post("/v1/chat/completions", json=STREAM)
            assert answer.status_code == 200, (case, answer.text)
            chunks = sse_payloads(answer.text)
            assert "Hello from b" in "".join(
                c["choices"][0]["delta"].get("content") or "" for c in chunks if c["choices"]
            )
            assert answer.text.endswith("data: [DONE]\n\n")
            upstream_a.set_faults([case])
            events = client.post("/v1/messages", json={**MESSAGES, "stream": True})
            assert events.status_code == 200
            assert [p["type"] for p in sse_payloads(events.text)][-1] == "message_stop"
            wait_idle(table, "a", "b")


def test_with_no_healthy_deployment_the_client_gets_a_clean_502(
    start_gateway, upstream_a: MockUpstream, table: TableView
) -> None:  # type: ignore[no-untyped-def]
    gw = start_gateway(
        config(
            deployment("a", upstream_a),
            router=fast_router(),
            gateway={"upstream_limits": LIMITS},
        )
    )
    with httpx.Client(base_url=gw.base_url, timeout=30) as client:
        upstream_a.set_faults([], persistent={"huge_json_bytes": 200 * MiB})
        answer = client.post("/v1/chat/completions", json=CHAT)
        assert answer.status_code == 502
        error = openai_error(answer)
        assert error["code"] == "upstream_answer_too_large"
        assert "gateway.upstream_limits.answer_bytes" in error["message"]
        message = client.post("/v1/messages", json=MESSAGES)
        assert message.status_code == 502
        assert anthropic_error(message)["type"] == "api_error"
        upstream_a.set_faults([], persistent={"nan": True})
        nan = client.post("/v1/chat/completions", json=CHAT)
        assert nan.status_code == 502
        assert "malformed answer" in openai_error(nan)["message"]
        wait_idle(table, "a")


def test_an_endless_stream_is_cut_at_the_stream_cap_with_an_in_band_error(
    start_gateway, upstream_a: MockUpstream, table: TableView
) -> None:  # type: ignore[no-untyped-def]
    gw = start_gateway(
        config(
            deployment("a", upstream_a), router=fast_router(), gateway={"upstream_limits": LIMITS}
        )
    )
    upstream_a.set_faults([{"endless_stream": True}])
    answer = httpx.post(gw.base_url + "/v1/chat/completions", json=STREAM, timeout=30)
    assert answer.status_code == 200  # committed: content was relayed before the cap
    payloads = sse_payloads(answer.text)
    assert "gateway.upstream_limits.stream_bytes" in payloads[-1]["error"]["message"]
    assert 3 * MiB < len(answer.content) < 5 * MiB
    wait_idle(table, "a")


def test_other_requests_are_served_while_a_hostile_stream_is_read(
    start_gateway, upstream_a: MockUpstream, upstream_b: MockUpstream
) -> None:  # type: ignore[no-untyped-def]
    # A 4 MiB line without a newline, read whole (the event cap is above it): the old
    # quadratic parser stalled the event loop for seconds on it.
    cfg = hostile_pair(upstream_a, upstream_b)
    cfg["gateway"]["upstream_limits"] = {**LIMITS, "event_bytes": 8 * MiB, "stream_bytes": 16 * MiB}
    pair = start_gateway(cfg)
    assert httpx.get(pair.base_url + "/v1/models").status_code == 200  # built, warm
    slow: list[float] = []
    hostile_done = threading.Event()

    def hostile() -> None:
        try:
            for _ in range(2):
                upstream_a.set_faults([{"long_line_bytes": 4 * MiB}])
                httpx.post(pair.base_url + "/v1/chat/completions", json=STREAM, timeout=30)
        finally:
            hostile_done.set()

    worker = threading.Thread(target=hostile)
    worker.start()
    with httpx.Client(base_url=pair.base_url, timeout=30) as client:
        while not hostile_done.is_set():
            started = time.monotonic()
            assert client.get("/v1/models").status_code == 200
            slow.append(time.monotonic() - started)
    worker.join()
    assert slow
    assert max(slow) < 1.5, f"the gateway stalled for {max(slow):.2f} s"


def test_an_upstream_echoing_its_request_headers_does_not_hand_out_its_key(
    pair: GatewayServer, upstream_a: MockUpstream
) -> None:
    with httpx.Client(base_url=pair.base_url, timeout=30) as client:
        for body in (CHAT, STREAM):
            upstream_a.set_faults([{"echo_headers": True}])
            answer = client.post("/v1/chat/completions", json=body)
            assert answer.status_code == 200
            assert upstream_a.requests()[-1]["headers"]["authorization"] == f"Bearer {MOCK_KEY}"
            assert MOCK_KEY not in answer.text
            assert "[redacted]" in answer.text


def test_an_answer_whose_usage_counts_are_not_counts_is_malformed_and_fails_over(
    pair: GatewayServer, upstream_a: MockUpstream, upstream_b: MockUpstream, table: TableView
) -> None:
    # Such an answer can be neither billed nor rendered as sent: the deployment's malformed
    # answer (failed over, in-flight released), never a 200 counting zero tokens.
    odd = {
        "id": "x",
        "object": "chat.completion",
        "choices": [{"message": {"content": "hi"}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": "many", "completion_tokens": []},
    }
    upstream_a.set_faults([{"body": odd}])
    answer = httpx.post(pair.base_url + "/v1/messages", json=MESSAGES, timeout=30)
    assert answer.status_code == 200, answer.text
    assert len(upstream_b.requests()) == 1  # b answered
    assert answer.json()["usage"]["input_tokens"] > 0  # b's own counts
    # With nowhere to fail over to, the client gets the clean 502.
    upstream_a.set_faults([], persistent={"body": odd})
    upstream_b.set_faults([], persistent={"body": odd})
    failed = httpx.post(pair.base_url + "/v1/messages", json=MESSAGES, timeout=30)
    assert failed.status_code == 502, failed.text
    assert anthropic_error(failed)["type"] == "api_error"
    wait_idle(table, "a", "b")


@pytest.mark.parametrize("status", [301, 302, 307, 308])
def test_an_upstream_redirect_is_a_502_never_relayed_or_followed(
    start_gateway, upstream_a: MockUpstream, make_upstream: Any, status: int
) -> None:
    # The probe: a 302 reached the client as HTTP 302, Location and all.
    elsewhere = make_upstream("elsewhere")
    gw = start_gateway(config(deployment("a", upstream_a), router=fast_router()))
    location = {"location": elsewhere.base_url + "/chat/completions"}
    upstream_a.set_faults([], persistent={"status": status, "headers": location})
    with httpx.Client(base_url=gw.base_url, timeout=30) as client:
        for body in (CHAT, STREAM):
            answer = client.post("/v1/chat/completions", json=body)
            assert answer.status_code == 502, answer.text
            assert "location" not in answer.headers
            error = openai_error(answer)
            assert error["code"] == "upstream_redirect"
            assert elsewhere.base_url not in answer.text
        anthropic = client.post("/v1/messages", json={**CHAT, "max_tokens": 5})
        assert anthropic.status_code == 502
        assert "location" not in anthropic.headers
    assert elsewhere.requests() == []  # never followed
