"""UpstreamClient.send against a real loopback mock: success and every failure."""

from __future__ import annotations

import asyncio
import time
from email.utils import formatdate
from typing import Any

import pytest

from edgeproxy.config.policies import Operation
from edgeproxy.errors import UpstreamFault
from edgeproxy.routing.faults import FaultKind
from edgeproxy.upstream.call import UpstreamCall
from edgeproxy.upstream.client import UpstreamClient
from edgeproxy_dev.mock_upstream import MockUpstream
from tests.fixtures.clock import FleetClock
from tests.fixtures.configs import LOOPBACK_EGRESS
from tests.integration.upstream.helpers import MESSAGES, chat, closed_port_url, deployment


async def test_json_ok(upstream_a: MockUpstream, upstream_client: UpstreamClient) -> None:
    body = {"model": "gpt-4o", "messages": MESSAGES, "x_custom": {"keep": [1, 2]}, "seed": 3}
    call = chat(upstream_a, body=body, extra_headers={"X-Trace": "t-1", "Authorization": "no"})
    answer = await upstream_client.send(call)

    (seen,) = upstream_a.requests()
    assert seen["path"] == "/v1/chat/completions"
    assert seen["body"] == {**body, "model": "upstream-model-1"}
    assert seen["headers"]["authorization"] == "Bearer sk-test-credential"
    assert seen["headers"]["x-trace"] == "t-1"

    assert answer.status == 200
    assert answer.body["model"] == "upstream-model-1"
    assert answer.body["system_fingerprint"] == "mock-a"
    assert answer.body["choices"][0]["message"]["content"] == "Hello from a! You said: ping"
    assert answer.usage.completion_tokens == 6  # one per word
    assert answer.usage.prompt_tokens > 0
    assert answer.rate_limits is not None
    assert answer.rate_limits.remaining_requests == 9999
    assert answer.request_id == "req_mock_a_1"
    assert 0 < answer.elapsed_s < 10  # measured, not a speed test


async def test_no_credential_sends_no_auth(
    upstream_a: MockUpstream, upstream_client: UpstreamClient
) -> None:
    await upstream_client.send(chat(upstream_a, credential=None))
    assert "authorization" not in upstream_a.requests()[0]["headers"]


async def test_keep_alive_reuses_one_connection(
    upstream_a: MockUpstream, upstream_client: UpstreamClient
) -> None:
    await upstream_client.send(chat(upstream_a))
    await upstream_client.send(chat(upstream_a))
    assert [r["connection"] for r in upstream_a.requests()] == [1, 1]


async def test_embeddings(upstream_a: MockUpstream, upstream_client: UpstreamClient) -> None:
    call = UpstreamCall(
        deployment(upstream_a),
        Operation.EMBEDDINGS,
        {"model": "emb", "input": ["a", "b"]},
        response_timeout_s=2,
        egress=LOOPBACK_EGRESS,
    )
    answer = await upstream_client.send(call)
    assert upstream_a.requests()[0]["path"] == "/v1/embeddings"
    assert [len(item["embedding"]) for item in answer.body["data"]] == [8, 8]
    assert answer.usage.prompt_tokens == 2


@pytest.mark.parametrize(
    ("mock_fault", "status", "code", "retry_after"),
    [
        ({"status": 429, "retry_after": "2"}, 429, "rate_limit_exceeded", 2.0),
        (
            {"status": 429, "retry_after_ms": 1500, "retry_after": "9"},
            429,
            "rate_limit_exceeded",
            1.5,
        ),
        ({"status": 500}, 500, None, None),
        ({"status": 503, "retry_after": "1"}, 503, None, 1.0),
        (
            {"status": 400, "error": {"code": "context_length_exceeded"}},
            400,
            "context_length_exceeded",
            None,
        ),
        (
            {"status": 400, "error": {"code": "content_policy_violation"}},
            400,
            "content_policy_violation",
            None,
        ),
        ({"status": 400, "error": {"code": "content_filter"}}, 400, "content_filter", None),
        ({"status": 401}, 401, "invalid_api_key", None),
        ({"status": 404}, 404, "model_not_found", None),
    ],
)
async def test_error_answers(
    upstream_a: MockUpstream,
    upstream_client: UpstreamClient,
    mock_fault: dict[str, Any],
    status: int,
    code: str | None,
    retry_after: float | None,
) -> None:
    upstream_a.set_faults([mock_fault])
    with pytest.raises(UpstreamFault) as info:
        await upstream_client.send(chat(upstream_a))
    fault = info.value.fault
    assert (fault.kind, fault.status, fault.code, fault.retry_after) == (
        FaultKind.HTTP,
        status,
        code,
        retry_after,
    )


async def test_retry_after_as_http_date(
    upstream_a: MockUpstream, upstream_client: UpstreamClient, clock: FleetClock
) -> None:
    in_30_s = formatdate(clock.now() + 30, usegmt=True)
    upstream_a.set_faults([{"status": 429, "retry_after": in_30_s}])
    with pytest.raises(UpstreamFault) as info:
        await upstream_client.send(chat(upstream_a))
    assert info.value.fault.retry_after == pytest.approx(30, abs=2)


async def test_error_message_is_sanitized(
    upstream_a: MockUpstream, upstream_client: UpstreamClient
) -> None:
    leaky = f"key sk-test-credential at {upstream_a.base_url} is bad; see docs"
    upstream_a.set_faults([{"status": 400, "error": {"message": leaky}}])
    with pytest.raises(UpstreamFault) as info:
        await upstream_client.send(chat(upstream_a))
    message = info.value.fault.message
    assert "sk-test" not in message
    assert "127.0.0.1" not in message
    assert message.endswith("is bad; see docs")


async def test_401_message_hides_the_masked_key(
    upstream_a: MockUpstream, upstream_client: UpstreamClient
) -> None:
    upstream_a.set_faults([{"status": 401}])
    with pytest.raises(UpstreamFault) as info:
        await upstream_client.send(chat(upstream_a))
    assert "sk-mock" not in info.value.fault.message
    assert info.value.fault.message.startswith("Incorrect API key provided: [redacted]")


@pytest.mark.parametrize(
    ("mock_fault", "kind"),
    [
        ({"reset": True}, FaultKind.RESET),
        ({"malformed_after_chunks": 0}, FaultKind.MALFORMED),
        ({"body": [1, 2, 3]}, FaultKind.MALFORMED),
    ],
)
async def test_broken_answers(
    upstream_a: MockUpstream,
    upstream_client: UpstreamClient,
    mock_fault: dict[str, Any],
    kind: FaultKind,
) -> None:
    upstream_a.set_faults([mock_fault])
    with pytest.raises(UpstreamFault) as info:
        await upstream_client.send(chat(upstream_a))
    assert info.value.fault.kind is kind
    # The next request is served normally: one fault per request.
    assert (await upstream_client.send(chat(upstream_a))).status == 200


async def test_connect_refused(upstream_client: UpstreamClient) -> None:
    with pytest.raises(UpstreamFault) as info:
        await upstream_client.send(chat(closed_port_url()))
    assert info.value.fault.kind is FaultKind.CONNECT


@pytest.mark.parametrize(
    "mock_fault", [{"stall": True}, {"latency_ms": 20_000}, {"first_token_delay_ms": 20_000}]
)
async def test_response_timeout_aborts_the_request(
    upstream_a: MockUpstream, upstream_client: UpstreamClient, mock_fault: dict[str, Any]
) -> None:
    upstream_a.set_faults([mock_fault])
    started = time.perf_counter()
    with pytest.raises(UpstreamFault) as info:
        await upstream_client.send(chat(upstream_a, response_timeout_s=0.3))
    assert info.value.fault.kind is FaultKind.TIMEOUT
    assert 0.25 < time.perf_counter() - started < 10  # not the 20 s (or endless) stall
    if not mock_fault.get("stall"):
        return
    # Aborted on the connection: the stalled mock sees its client hang up.
    for _ in range(50):
        if upstream_a.open_connections == 0:
            break
        await asyncio.sleep(0.02)
    assert upstream_a.open_connections == 0
