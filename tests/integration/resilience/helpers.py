"""Shared pieces of the resilience tests: tight policies, admin keys, clients, SSE reading.

Every configuration here uses small deadlines and cooldowns so that each
test runs in a few seconds against real gateways and mock upstreams.
"""

from __future__ import annotations

import hashlib
from typing import Any

import httpx
import openai

from edgeproxy.config.policies import default_execution_policies
from tests.fixtures.secrets import remember

ADMIN_KEY = remember("sk-admin-resilience")
CLIENT_KEY = remember("sk-client-resilience")
HELLO = [{"role": "user", "content": "Hello!"}]


def policies(
    *, json: dict[str, Any] | None = None, stream: dict[str, Any] | None = None
) -> dict[str, Any]:
    """The complete execution-policy matrix with the chat entry tightened."""
    matrix = {
        op.value: policy.model_dump(by_alias=True)
        for op, policy in default_execution_policies().items()
    }
    matrix["chat"]["json"].update(json or {})
    matrix["chat"]["stream"].update(stream or {})
    return matrix


def router(
    *,
    circuit: dict[str, Any] | None = None,
    json: dict[str, Any] | None = None,
    stream: dict[str, Any] | None = None,
    sticky: bool = False,
    **settings: Any,
) -> dict[str, Any]:
    """A ``router`` section: circuit knobs and the chat policy (short defaults).

    Sticky bindings are off unless asked for, so that which deployment serves
    a request depends only on priorities and circuits.
    """
    return {
        "circuit": circuit or {},
        "execution_policies": policies(
            json={"response_ms": 2000, "total_ms": 10_000, **(json or {})},
            stream={"response_ms": 2000, "idle_ms": 2000, "total_ms": 10_000, **(stream or {})},
        ),
        "sticky": {"enabled": sticky},
        **settings,
    }


def keys() -> dict[str, Any]:
    """A ``gateway`` section with one client key and one admin key."""
    return {
        "api_keys": [
            {"name": "client", "sha256": hashlib.sha256(CLIENT_KEY.encode()).hexdigest()},
            {
                "name": "admin",
                "sha256": hashlib.sha256(ADMIN_KEY.encode()).hexdigest(),
                "admin": True,
            },
        ]
    }


def client(base_url: str, *, max_retries: int = 0, **kwargs: Any) -> openai.OpenAI:
    """The stock openai SDK against a gateway, without its own retries unless asked."""
    return openai.OpenAI(
        base_url=base_url + "/v1", api_key=CLIENT_KEY, max_retries=max_retries, timeout=30, **kwargs
    )


def post_chat(
    base_url: str, model: str, *, stream: bool = False, metadata: bool = False, **body: Any
) -> httpx.Response:
    """One raw chat request (the whole body read, also for streams)."""
    headers = {"authorization": f"Bearer {CLIENT_KEY}"}
    if metadata:
        headers["x-unified-routing-metadata"] = "true"
    payload = {"model": model, "messages": HELLO, "stream": stream, **body}
    return httpx.post(base_url + "/v1/chat/completions", json=payload, headers=headers, timeout=30)


def deployment_status(base_url: str, model: str) -> dict[str, dict[str, Any]]:
    """The admin status view, by deployment id."""
    answer = httpx.get(
        f"{base_url}/v1/models/{model}/deployments",
        headers={"authorization": f"Bearer {ADMIN_KEY}"},
        timeout=10,
    )
    answer.raise_for_status()
    return {d["id"]: d for d in answer.json()["deployments"]}


def model_requests(upstream: Any) -> list[dict[str, Any]]:
    """The upstream's chat requests (the control API is not logged, but be explicit)."""
    return [r for r in upstream.requests() if r["path"] == "/v1/chat/completions"]
