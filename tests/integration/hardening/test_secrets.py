"""Secrets: upstream error fields and echoes are scrubbed; the session's watch really watches."""

from __future__ import annotations

import asyncio
import logging

import httpx
import pytest

from edgeproxy_dev.mock_upstream import MockUpstream
from edgeproxy_dev.runner import MOCK_KEY
from tests.fixtures import leaks
from tests.fixtures.gateway import GatewayServer
from tests.fixtures.table import TableView
from tests.integration.hardening.helpers import (
    CHAT,
    MESSAGES,
    config,
    deployment,
    fast_router,
    wait_idle,
)

LEAKY_ERROR = {
    "message": f"Incorrect API key provided: {MOCK_KEY}",
    "type": f"invalid_key_{MOCK_KEY}",
    "code": MOCK_KEY,
    "param": f"Authorization: Bearer {MOCK_KEY}",
}


@pytest.fixture
def gateway(start_gateway, upstream_a: MockUpstream) -> GatewayServer:  # type: ignore[no-untyped-def]
    return start_gateway(config(deployment("a", upstream_a), router=fast_router()))


@pytest.mark.parametrize("status", [400, 401, 500])
def test_no_field_of_an_upstream_error_carries_the_credential(
    gateway: GatewayServer, upstream_a: MockUpstream, table: TableView, status: int
) -> None:
    with httpx.Client(base_url=gateway.base_url, timeout=30) as client:
        for path, body in (
            ("/v1/chat/completions", CHAT),
            ("/v1/chat/completions", {**CHAT, "stream": True}),
            ("/v1/messages", MESSAGES),
        ):
            upstream_a.set_faults([], persistent={"status": status, "error": LEAKY_ERROR})
            answer = client.post(path, json=body)
            assert answer.status_code >= 400
            assert MOCK_KEY not in answer.text
            if status == 400:  # relayed as is (401 quarantines, 500 is generic)
                assert "[redacted]" in answer.text
    wait_idle(table, "a")


def test_the_watch_sees_a_planted_secret_in_a_body_and_a_log_line() -> None:
    # The session's watch must not pass vacuously: a watch of its own sees a real leak.
    watch = leaks.Watch()

    async def leaky(scope: leaks.Scope, receive: leaks.Receive, send: leaks.Send) -> None:
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send(
            {"type": "http.response.body", "body": b"a " + MOCK_KEY[:5].encode(), "more_body": True}
        )
        await send({"type": "http.response.body", "body": MOCK_KEY[5:].encode() + b" b"})

    async def call() -> None:
        async def receive() -> leaks.Message:
            return {"type": "http.request", "body": b""}

        async def send(message: leaks.Message) -> None:
            return None

        scope = {
            "type": "http",
            "path": "/x",
            "headers": [(b"authorization", b"Bearer sk-presented-key-0001")],
        }
        await leaks.record_bodies(leaky, watch)(scope, receive, send)

    asyncio.run(call())
    assert watch.bodies == 1
    assert "sk-presented-key-0001" in watch.secrets  # learned from the request
    assert len(watch.hits) == 1  # found although split across two body messages
    logger = logging.getLogger("tests.leak-probe")
    handler = leaks.LeakHandler(watch)
    logger.addHandler(handler)
    try:
        logger.warning("client said %s", "sk-presented-key-0001")
    finally:
        logger.removeHandler(handler)
    assert watch.log_lines == 1
    assert len(watch.hits) == 2


def test_the_session_watch_is_fed_by_the_gateways(gateway: GatewayServer) -> None:
    before = (leaks.WATCH.bodies, leaks.WATCH.log_lines)
    assert httpx.post(gateway.base_url + "/v1/chat/completions", json=CHAT).status_code == 200
    assert leaks.WATCH.bodies > before[0]
    assert leaks.WATCH.log_lines > before[1]
