"""One client cannot cool a pool for everyone: failures that follow the request are not counted.

Two loopback mocks serve the pool; both fail any request whose prompt is
longer than their "context window" (a 500 naming the prompt's length, or a
stream cut before its first chunk) and answer every other one. One key
sends over-long streamed prompts while another key's requests are served.
"""

from __future__ import annotations

import hashlib
from typing import Any

import httpx
import pytest

from edgeproxy.routing.snapshot import CircuitState
from edgeproxy_dev.mock_upstream import MockUpstream
from tests.fixtures.configs import config, deployment
from tests.fixtures.secrets import remember
from tests.fixtures.table import TableView
from tests.integration.resilience.helpers import CLIENT_KEY, HELLO, keys, model_requests, router

OTHER_KEY = remember("sk-other-resilience")
WINDOW_CHARS = 2000
LONG = [{"role": "user", "content": "tell me about the sea " * 200}]  # 4,400 characters


def _gateway_keys() -> dict[str, Any]:
    section = keys()
    digest = hashlib.sha256(OTHER_KEY.encode()).hexdigest()
    section["api_keys"].append({"name": "other", "sha256": digest})
    return section


def _chat(base_url: str, key: str, messages: list[dict[str, str]]) -> httpx.Response:
    return httpx.post(
        base_url + "/v1/chat/completions",
        json={"model": "fast-chat", "messages": messages, "stream": True},
        headers={"authorization": f"Bearer {key}"},
        timeout=30,
    )


@pytest.mark.parametrize(
    ("fault", "status", "code"),
    [
        (
            {"status": 500, "error": {"message": "the prompt is too long for the context window"}},
            400,
            "context_length_exceeded",
        ),
        ({"cut_after_chunks": 0}, 502, "request_failed_on_every_deployment"),
    ],
    ids=["500-naming-the-length", "cut-stream"],
)
def test_over_long_streamed_prompts_from_one_key_leave_every_circuit_closed(
    start_gateway,
    table: TableView,
    upstream_a: MockUpstream,
    upstream_b: MockUpstream,
    fault: dict[str, Any],
    status: int,
    code: str,
) -> None:
    gw = start_gateway(
        config(
            deployment("a", upstream_a),
            deployment("b", upstream_b),
            # One counted failure more than allowed opens a circuit: 000's transient class
            # would open both on the first over-long prompt.
            router=router(circuit={"allowed_fails": 1, "cooldown_seconds": 60}),
            gateway=_gateway_keys(),
        )
    )
    for upstream in (upstream_a, upstream_b):
        upstream.set_faults([], persistent={**fault, "over_chars": WINDOW_CHARS})
    # Other callers are served by both deployments (the evidence that they are up).
    for _ in range(40):
        assert _chat(gw.base_url, OTHER_KEY, HELLO).status_code == 200
        if model_requests(upstream_a) and model_requests(upstream_b):
            break
    table.wait_successes(1, "a")
    table.wait_successes(1, "b")
    for upstream in (upstream_a, upstream_b):
        upstream.server.clear_requests()

    answers = [_chat(gw.base_url, CLIENT_KEY, LONG) for _ in range(4)]

    assert [a.status_code for a in answers] == [status] * 4
    assert {a.json()["error"]["code"] for a in answers} == {code}
    # Each request tried both deployments once, then stopped: the request was the cause.
    assert len(model_requests(upstream_a)) == 4
    assert len(model_requests(upstream_b)) == 4
    for dep_id in ("a", "b"):
        circuit = table.circuit(dep_id)
        assert (circuit.state, circuit.failures) == (CircuitState.CLOSED, 0), dep_id
    served = [_chat(gw.base_url, OTHER_KEY, HELLO).status_code for _ in range(4)]
    assert served == [200] * 4
