"""OpenTelemetry traces: a gateway process exports its spans to an OTLP collector on loopback.

Each request is a SERVER span ``{operation} {model}`` with one CLIENT span per
attempt, carrying the GenAI semantic conventions' attributes and edgeproxy's
own; the collector (tests/fixtures/otlp.py) decodes what the exporter sent.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections.abc import Iterator

import httpx
import pytest

from edgeproxy.api.streaming import build_streaming_app
from edgeproxy_dev.dynamo_server import DUMMY_CREDENTIALS
from edgeproxy_dev.mock_upstream import MockUpstream
from edgeproxy_dev.runner import MOCK_KEY, local_settings
from tests.fixtures.configs import config, deployment
from tests.fixtures.failover import failover_pair
from tests.fixtures.gateway import TEST_ENV, store
from tests.fixtures.otlp import CollectedSpan, Collector
from tests.integration.resilience.helpers import CLIENT_KEY, keys, post_chat, router

PROMPT = "Hello!"  # what post_chat sends: never in a span


@pytest.fixture
def collector() -> Iterator[Collector]:
    running = Collector().start()
    yield running
    running.stop()


def _requests(spans: list[CollectedSpan]) -> list[CollectedSpan]:
    return [s for s in spans if s.kind == "SERVER"]


def _attempts(spans: list[CollectedSpan], request: CollectedSpan) -> list[CollectedSpan]:
    children = [s for s in spans if s.parent_span_id == request.span_id]
    assert all(c.trace_id == request.trace_id and c.kind == "CLIENT" for c in children)
    return sorted(children, key=lambda s: s.attributes["edgeproxy.attempt.number"])


def _one_request(collector: Collector, attempts: int) -> tuple[CollectedSpan, list[CollectedSpan]]:
    """The only request span, once it and its ``attempts`` children have arrived."""

    def ready(spans: list[CollectedSpan]) -> bool:
        requests = _requests(spans)
        return len(requests) == 1 and len(_attempts(spans, requests[0])) == attempts

    spans = collector.wait_for(ready)
    [request] = _requests(spans)
    return request, _attempts(spans, request)


def _no_secrets(collector: Collector) -> None:
    for body in collector.bodies:
        for secret in (PROMPT, CLIENT_KEY, MOCK_KEY, "/v1/chat"):
            assert secret.encode() not in body


def test_a_json_request_is_a_server_span_with_one_attempt_and_genai_attributes(
    spawn_gateway, collector: Collector, upstream_a: MockUpstream
) -> None:
    gw = spawn_gateway(
        config(deployment("a", upstream_a), router=router(), gateway=keys()), env=collector.env
    )
    answer = post_chat(gw.base_url, "fast-chat")
    assert answer.status_code == 200
    usage = answer.json()["usage"]

    request, [attempt] = _one_request(collector, attempts=1)
    assert request.name == "chat fast-chat"
    assert request.resource["service.name"] == "edgeproxy"
    assert not request.error
    assert request.attributes == {
        "gen_ai.operation.name": "chat",
        "gen_ai.request.model": "fast-chat",
        "gen_ai.response.model": answer.json()["model"],
        "gen_ai.response.id": answer.json()["id"],
        "gen_ai.system": "openai",
        "gen_ai.provider.name": "openai",
        "gen_ai.usage.input_tokens": usage["prompt_tokens"],
        "gen_ai.usage.output_tokens": usage["completion_tokens"],
        "http.response.status_code": 200,
        "edgeproxy.request_id": answer.headers["x-request-id"],
        "edgeproxy.stream": False,
        "edgeproxy.attempts": 1,
        "edgeproxy.fallback_used": False,
        "edgeproxy.deployment.id": "a",
        "edgeproxy.served_model": "fast-chat",
    }
    assert attempt.name == "chat mock-small"
    assert attempt.attributes["gen_ai.request.model"] == "mock-small"
    assert attempt.attributes["server.address"] == "127.0.0.1"
    assert attempt.attributes["server.port"] == upstream_a.port
    assert attempt.attributes["edgeproxy.deployment.id"] == "a"
    assert attempt.attributes["edgeproxy.attempt.number"] == 1
    assert attempt.attributes["gen_ai.usage.output_tokens"] == usage["completion_tokens"]
    assert "edgeproxy.failure.class" not in attempt.attributes
    assert request.start_ns <= attempt.start_ns <= attempt.end_ns <= request.end_ns
    assert all(t.startswith("application/x-protobuf") for t in collector.content_types)
    _no_secrets(collector)


def test_a_failover_is_two_attempt_spans_the_first_with_its_failure_class(
    spawn_gateway, collector: Collector, upstream_a: MockUpstream, upstream_b: MockUpstream
) -> None:
    gw = spawn_gateway(
        config(
            *failover_pair(upstream_a, upstream_b),
            router=router(),
            gateway=keys(),
        ),
        env=collector.env,
    )
    upstream_a.set_faults([{"status": 503}])
    assert post_chat(gw.base_url, "fast-chat").status_code == 200

    request, [first, second] = _one_request(collector, attempts=2)
    assert not request.error
    assert request.attributes["edgeproxy.deployment.id"] == "b"
    assert request.attributes["edgeproxy.attempts"] == 2
    assert first.error
    assert not second.error
    assert first.attributes["edgeproxy.deployment.id"] == "a"
    assert first.attributes["server.port"] == upstream_a.port
    assert first.attributes["http.response.status_code"] == 503
    assert first.attributes["edgeproxy.failure.class"] == "transient"
    assert first.attributes["error.type"] == "http"
    assert "gen_ai.usage.input_tokens" not in first.attributes
    assert second.attributes["edgeproxy.deployment.id"] == "b"
    assert second.attributes["server.port"] == upstream_b.port
    assert second.attributes["edgeproxy.attempt.number"] == 2
    assert first.end_ns <= second.start_ns  # one after the other
    _no_secrets(collector)


def test_a_stream_span_lasts_to_its_end_and_carries_the_time_to_first_token(
    spawn_gateway, collector: Collector, upstream_a: MockUpstream
) -> None:
    gw = spawn_gateway(
        config(deployment("a", upstream_a), router=router(), gateway=keys()), env=collector.env
    )
    upstream_a.set_faults([{"first_token_delay_ms": 300, "chunk_delay_ms": 50}])
    answer = post_chat(gw.base_url, "fast-chat", stream=True)
    assert answer.status_code == 200
    assert "[DONE]" in answer.text

    request, [attempt] = _one_request(collector, attempts=1)
    assert not request.error
    assert request.attributes["edgeproxy.stream"] is True
    assert request.attributes["http.response.status_code"] == 200
    ttft_ms = request.attributes["edgeproxy.time_to_first_token_ms"]
    assert ttft_ms >= 300
    assert request.duration_s * 1000 >= ttft_ms  # the span ends with the stream, not its head
    assert request.attributes["gen_ai.response.model"]
    assert attempt.attributes["edgeproxy.stream"] is True
    assert attempt.end_ns == request.end_ns  # the serving attempt lasts as long as the stream
    _no_secrets(collector)


def test_an_error_marks_the_request_and_its_attempt_spans(
    spawn_gateway, collector: Collector, upstream_a: MockUpstream
) -> None:
    gw = spawn_gateway(
        config(deployment("a", upstream_a), router=router(), gateway=keys()), env=collector.env
    )
    upstream_a.set_faults([{"status": 400}])
    answer = post_chat(gw.base_url, "fast-chat")
    assert answer.status_code == 400

    request, [attempt] = _one_request(collector, attempts=1)
    assert request.error
    assert attempt.error
    assert request.attributes["http.response.status_code"] == 400
    error = answer.json()["error"]
    assert request.attributes["error.type"] == (error["code"] or error["type"])
    assert (
        request.attributes["edgeproxy.failure.class"]
        == attempt.attributes["edgeproxy.failure.class"]
    )
    assert attempt.attributes["http.response.status_code"] == 400
    assert "gen_ai.usage.input_tokens" not in request.attributes
    _no_secrets(collector)


def test_a_model_that_does_not_exist_is_an_error_span_without_attempts(
    spawn_gateway, collector: Collector, upstream_a: MockUpstream
) -> None:
    gw = spawn_gateway(
        config(deployment("a", upstream_a), router=router(), gateway=keys()), env=collector.env
    )
    assert post_chat(gw.base_url, "no-such-model").status_code == 404
    request, [] = _one_request(collector, attempts=0)
    assert request.error
    assert request.attributes["error.type"] == "model_not_found"
    assert request.attributes["edgeproxy.attempts"] == 0


# With tracing off, serving requests must not import any tracing library (cold start).
_NO_TRACING = """
import asyncio, json, sys
import httpx
from edgeproxy.api.app import create_app
from edgeproxy.api.handler import build_handler
from edgeproxy.api.streaming import build_streaming_app
from edgeproxy.runtime import build_gateway
from edgeproxy_dev.runner import local_session, local_settings

settings = local_settings(sys.argv[1], sys.argv[2])
build_handler(settings)
build_streaming_app(settings)

async def main():
    app = create_app(lambda: build_gateway(settings, session=local_session()))
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://gw") as client:
            for stream in (False, True):
                body = {"model": "fast-chat", "stream": stream,
                        "messages": [{"role": "user", "content": "Hi"}]}
                answer = await client.post("/v1/chat/completions", json=body,
                                           headers={"authorization": "Bearer " + sys.argv[3]})
                assert answer.status_code == 200, answer.text
        await app.state.gateway.aclose()

asyncio.run(main())
print(json.dumps(sorted(m for m in sys.modules
                        if m.split(".")[0] in ("opentelemetry", "aws_xray_sdk", "google"))))
"""


def test_with_tracing_off_no_tracing_library_is_imported(
    dynamo_endpoint: str, gateway_table: str, upstream_a: MockUpstream
) -> None:
    store(
        dynamo_endpoint,
        gateway_table,
        config(deployment("a", upstream_a), router=router(), gateway=keys()),
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    env.pop("EDGEPROXY_XRAY", None)
    done = subprocess.run(  # noqa: S603 - our own interpreter
        [sys.executable, "-c", _NO_TRACING, dynamo_endpoint, gateway_table, CLIENT_KEY],
        env={**env, **TEST_ENV},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.strip().splitlines()[-1]) == []


def test_the_streaming_entry_sends_a_streams_spans_before_its_response_ends(
    monkeypatch: pytest.MonkeyPatch,
    dynamo_endpoint: str,
    gateway_table: str,
    collector: Collector,
    upstream_a: MockUpstream,
) -> None:
    # The streaming function's response ends when Lambda may freeze it: its spans go
    # first. The batch delay is ten minutes here, so only that flush can deliver them.
    store(
        dynamo_endpoint,
        gateway_table,
        config(deployment("a", upstream_a), router=router(), gateway=keys()),
    )
    # The entry point's own AWS session (default chain) signs the embedded store's calls.
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", DUMMY_CREDENTIALS["aws_access_key_id"])
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", DUMMY_CREDENTIALS["aws_secret_access_key"])
    base = local_settings(dynamo_endpoint, gateway_table)
    settings = type(base).from_env(
        {
            **base.environ,
            **TEST_ENV,
            "OTEL_EXPORTER_OTLP_ENDPOINT": collector.endpoint,
            "OTEL_BSP_SCHEDULE_DELAY": "600000",
        }
    )
    app = build_streaming_app(settings)
    body = {"model": "fast-chat", "stream": True, "messages": [{"role": "user", "content": PROMPT}]}

    async def serve() -> tuple[httpx.Response, list[CollectedSpan]]:
        transport = httpx.ASGITransport(app=app)
        try:
            async with httpx.AsyncClient(transport=transport, base_url="http://gw") as client:
                answer = await client.post(
                    "/v1/chat/completions",
                    json=body,
                    headers={"authorization": f"Bearer {CLIENT_KEY}"},
                )
                return answer, collector.spans()  # at once, no polling
        finally:
            inner = app
            while not hasattr(inner, "state"):  # the middlewares' app, down to Starlette
                inner = inner._app
            await inner.state.gateway.aclose()

    answer, spans = asyncio.run(serve())
    assert answer.status_code == 200
    assert "[DONE]" in answer.text
    assert sorted(s.kind for s in spans) == ["CLIENT", "SERVER"]
    _no_secrets(collector)
