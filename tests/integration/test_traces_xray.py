"""X-Ray (``EDGEPROXY_XRAY=on``): subsegments per request and attempt through Powertools' Tracer.

A fresh interpreter serves a failover through the gateway's app with the
variables Lambda gives an invocation (``LAMBDA_TASK_ROOT``, a sampled
``_X_AMZN_TRACE_ID``, the daemon's address); the test is the daemon: it
reads the X-Ray SDK's UDP datagrams and decodes the subsegments.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest

from edgeproxy_dev.mock_upstream import MockUpstream
from edgeproxy_dev.runner import MOCK_KEY
from tests.fixtures.configs import config
from tests.fixtures.failover import failover_pair
from tests.fixtures.gateway import TEST_ENV, store
from tests.integration.resilience.helpers import CLIENT_KEY, keys, router

ROOT_ID = "1-67890abc-0123456789abcdef01234567"
TRACE_HEADER = f"Root={ROOT_ID};Parent=0123456789abcdef;Sampled=1"

_SERVE = """
import asyncio, sys
import httpx
from edgeproxy.api.app import create_app
from edgeproxy.runtime import build_gateway
from edgeproxy_dev.runner import local_session, local_settings

settings = local_settings(sys.argv[1], sys.argv[2])

async def main():
    app = create_app(lambda: build_gateway(settings, session=local_session()))
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://gw") as client:
            body = {"model": "fast-chat", "messages": [{"role": "user", "content": "Hi there"}]}
            answer = await client.post("/v1/chat/completions", json=body,
                                       headers={"authorization": "Bearer " + sys.argv[3]})
            assert answer.status_code == 200, answer.text
        await app.state.gateway.aclose()

asyncio.run(main())
"""


@pytest.fixture
def daemon() -> Iterator[socket.socket]:
    """A UDP socket on loopback standing in for the X-Ray daemon."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind(("127.0.0.1", 0))
    yield sock
    sock.close()


def _subsegments(sock: socket.socket) -> list[dict[str, Any]]:
    """Every subsegment the SDK sent (nested ones flattened), by id."""
    sock.settimeout(0.5)
    found: list[dict[str, Any]] = []
    try:
        while True:
            header, _, body = sock.recv(65536).decode().partition("\n")
            assert json.loads(header) == {"format": "json", "version": 1}
            pending = [json.loads(body)]
            while pending:
                entity = pending.pop()
                for child in entity.pop("subsegments", []):
                    pending.append({"parent_id": entity["id"], **child})
                found.append(entity)
    except TimeoutError:
        return found


def test_a_failover_is_a_request_subsegment_with_two_remote_attempt_subsegments(
    dynamo_endpoint: str,
    gateway_table: str,
    daemon: socket.socket,
    upstream_a: MockUpstream,
    upstream_b: MockUpstream,
) -> None:
    store(
        dynamo_endpoint,
        gateway_table,
        config(
            *failover_pair(upstream_a, upstream_b),
            router=router(),
            gateway=keys(),
        ),
    )
    upstream_a.set_faults([{"status": 503}])
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "AWS_XRAY"))}
    env.update(
        TEST_ENV,
        EDGEPROXY_XRAY="on",
        LAMBDA_TASK_ROOT="/var/task",
        _X_AMZN_TRACE_ID=TRACE_HEADER,
        AWS_XRAY_DAEMON_ADDRESS=f"127.0.0.1:{daemon.getsockname()[1]}",
    )
    done = subprocess.run(  # noqa: S603 - our own interpreter
        [sys.executable, "-c", _SERVE, dynamo_endpoint, gateway_table, CLIENT_KEY],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr

    subsegments = _subsegments(daemon)
    [request] = [s for s in subsegments if s["name"] == "chat fast-chat"]
    attempts = sorted(
        (s for s in subsegments if s.get("parent_id") == request["id"]),
        key=lambda s: s["annotations"]["edgeproxy_attempt_number"],
    )
    assert len(attempts) == 2, subsegments
    assert request["trace_id"] == ROOT_ID
    assert request["annotations"]["edgeproxy_deployment_id"] == "b"
    assert request["annotations"]["gen_ai_request_model"] == "fast-chat"
    attributes = request["metadata"]["edgeproxy"]["attributes"]
    assert attributes["gen_ai.operation.name"] == "chat"
    assert attributes["edgeproxy.attempts"] == 2
    assert attributes["gen_ai.usage.output_tokens"] > 0
    first, second = attempts
    assert first["namespace"] == second["namespace"] == "remote"
    assert first["annotations"]["edgeproxy_deployment_id"] == "a"
    assert first["annotations"]["edgeproxy_failure_class"] == "transient"
    assert first["annotations"]["http_response_status_code"] == 503
    assert first.get("fault") is True
    assert second["annotations"]["edgeproxy_deployment_id"] == "b"
    assert "fault" not in second
    assert request["start_time"] <= first["start_time"] <= first["end_time"]
    assert first["end_time"] <= second["start_time"] <= second["end_time"] <= request["end_time"]
    sent = json.dumps(subsegments)
    for secret in ("Hi there", CLIENT_KEY, MOCK_KEY, "/v1/chat"):
        assert secret not in sent
