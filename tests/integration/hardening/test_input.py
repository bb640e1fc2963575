"""Hostile client input: a 400 in the route's own error format, never a 5xx or a traceback."""

from __future__ import annotations

import logging
import socket

import httpx
import pytest

from edgeproxy_dev.mock_upstream import MockUpstream
from tests.fixtures.gateway import GatewayServer
from tests.integration.hardening.helpers import (
    CHAT,
    MESSAGES,
    anthropic_error,
    config,
    deployment,
    fast_router,
    openai_error,
)

ROUTES = [
    "/v1/chat/completions",
    "/v1/embeddings",
    "/v1/messages",
    "/v1/messages/count_tokens",
    "/v1/responses",
    "/v1/completions",
]
HOSTILE = {
    "nan": b'{"model": "fast-chat", "messages": [{"role": "user", "content": "x"}], "temperature": NaN}',
    "infinity": b'{"model": "fast-chat", "input": "x", "messages": [], "top_p": -Infinity}',
    "overflow": b'{"model": "fast-chat", "input": "x", "max_tokens": 1e400}',
    "surrogate": b'{"model": "fast-chat", "input": "\\ud800", "messages": [{"role": "user", "content": "\\ud800"}]}',
    "surrogate model": b'{"model": "\\ud800", "input": "x", "messages": []}',
    "deep": b'{"model": "fast-chat", "metadata": ' + b"[" * 1000 + b"]" * 1000 + b"}",
    "very deep": b"[" * 100_000 + b"]" * 100_000,
    "not utf-8": b'{"model": "\xff\xfe"}',
    "truncated": b'{"model": "fast-chat", "messages": [',
}


@pytest.fixture
def gateway(start_gateway, upstream_a: MockUpstream) -> GatewayServer:  # type: ignore[no-untyped-def]
    return start_gateway(config(deployment("a", upstream_a), router=fast_router()))


def error_of(route: str, response: httpx.Response) -> dict[str, object]:
    anthropic = route.startswith("/v1/messages")
    return anthropic_error(response) if anthropic else openai_error(response)


def test_bodies_that_cannot_be_re_encoded_get_a_400_in_the_routes_format(
    gateway: GatewayServer, upstream_a: MockUpstream, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING), httpx.Client(base_url=gateway.base_url) as client:
        for route in ROUTES:
            for case, raw in HOSTILE.items():
                answer = client.post(
                    route, content=raw, headers={"content-type": "application/json"}, timeout=10
                )
                assert answer.status_code == 400, (route, case, answer.text)
                assert "JSON" in str(error_of(route, answer)["message"]), (route, case)
        assert upstream_a.requests() == []  # nothing reached the upstream
        assert client.post("/v1/chat/completions", json=CHAT).status_code == 200
    assert [r for r in caplog.records if r.levelno >= logging.ERROR or r.exc_info] == []


def test_not_found_and_method_not_allowed_use_the_surface_of_the_path(
    gateway: GatewayServer,
) -> None:
    with httpx.Client(base_url=gateway.base_url, timeout=10) as client:
        wrong_method = client.get("/v1/messages")
        assert wrong_method.status_code == 405
        assert anthropic_error(wrong_method)["type"] == "invalid_request_error"
        assert wrong_method.headers["allow"] == "POST"
        below = client.post("/v1/messages/batches", json={})
        assert below.status_code == 404
        assert anthropic_error(below)["type"] == "not_found_error"
        for path, method in (("/v1/nothing", "POST"), ("/v1/chat/completions", "GET")):
            answer = client.request(method, path)
            assert answer.status_code in (404, 405)
            assert openai_error(answer)["code"] in ("not_found", "method_not_allowed")
        # And the routes still serve.
        assert client.post("/v1/chat/completions", json=CHAT).status_code == 200
        assert client.post("/v1/messages", json=MESSAGES).status_code == 200


MALFORMED_HTTP = [
    b"GARBAGE\r\n\r\n",
    b"GET /v1/models HTTP/1.1\r\nHost: x\r\nBad Header\r\n\r\n",
    b"GET /v1/\xff\xfe HTTP/1.1\r\nHost: x\r\n\r\n",
    b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: -5\r\n\r\n",
    # A head over the 64 KiB limit (never finished: the server must not wait for the rest).
    b"GET /v1/models HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 100_000,
]


def test_a_malformed_http_request_gets_json_not_plain_text(gateway: GatewayServer) -> None:
    for raw in MALFORMED_HTTP:
        with socket.create_connection(("127.0.0.1", gateway.port), timeout=5) as sock:
            sock.sendall(raw)
            received = b""
            while chunk := sock.recv(65536):
                received += chunk
        head, _, body = received.partition(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 400"), received[:200]
        assert b"application/json" in head
        assert httpx.Response(400, content=body).json()["error"]["code"] == "bad_request"
    assert httpx.get(gateway.base_url + "/health").status_code == 200
