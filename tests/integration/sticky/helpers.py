"""Helpers for the sticky-binding suite: chat calls and what their answers say.

    def test_x(start_gateway, table, upstream_a):  # ``table``: tests/fixtures/table.py
        gw = start_gateway(config(...))
        first = chat(gw, "sk-alice")
        binding = table.wait_binding(ALICE, first.headers[DEPLOYMENT])

A binding is in the table before its answer reaches the client
(``test_binding_visibility.py``), so ``wait_binding`` finds it at once; what
is written after the answer (counters) is polled for the same way
(``tests/fixtures/table.py``).
"""

from __future__ import annotations

from typing import Any

import httpx

from edgeproxy.routing.affinity import caller_id, key_digest
from tests.fixtures.gateway import GatewayProcess, GatewayServer

DEPLOYMENT = "x-edgeproxy-deployment"
ALICE_KEY = "sk-alice-0123456789abcdef"
ALICE = caller_id(key_digest(ALICE_KEY), None, None)

Gateway = GatewayServer | GatewayProcess


def chat(
    gateway: Gateway,
    key: str | None = ALICE_KEY,
    *,
    model: str = "fast-chat",
    image: bool = False,
    headers: dict[str, str] | None = None,
) -> httpx.Response:
    """One chat completion through ``gateway`` as the caller with ``key`` (routing metadata on)."""
    content: Any = "Hello!"
    if image:
        content = [
            {"type": "text", "text": "What is this?"},
            {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}},
        ]
    sent = {"x-unified-routing-metadata": "true", **(headers or {})}
    if key is not None:
        sent["authorization"] = f"Bearer {key}"
    body = {"model": model, "messages": [{"role": "user", "content": content}]}
    return httpx.post(
        gateway.base_url + "/v1/chat/completions", json=body, headers=sent, timeout=30
    )


def stream_chat(gateway: Gateway, key: str = ALICE_KEY) -> tuple[str, str]:
    """One streamed chat: (the deployment header, the whole SSE body)."""
    body = {"model": "fast-chat", "stream": True, "messages": [{"role": "user", "content": "Hi"}]}
    headers = {"authorization": f"Bearer {key}"}
    url = gateway.base_url + "/v1/chat/completions"
    with httpx.stream("POST", url, json=body, headers=headers, timeout=30) as answer:
        assert answer.status_code == 200
        return answer.headers.get(DEPLOYMENT, ""), answer.read().decode()


def served_by(answer: httpx.Response) -> str:
    """The deployment that answered (asserting the request succeeded)."""
    assert answer.status_code == 200, answer.text
    return answer.headers[DEPLOYMENT]


def attempts(answer: httpx.Response) -> list[tuple[str, bool]]:
    """(deployment, sticky) of every attempt, from the routing metadata."""
    return [(a["deployment"], a["sticky"]) for a in answer.json()["unified_routing"]["attempts"]]
