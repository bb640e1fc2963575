"""Shared pieces of the hardening tests: configurations, in-flight reads, error shapes."""

from __future__ import annotations

from typing import Any

import httpx

from edgeproxy.state import items, keys
from tests.fixtures.configs import config, deployment
from tests.fixtures.table import TableView, wait_for
from tests.integration.resilience.helpers import router

HELLO = [{"role": "user", "content": "Hello!"}]
CHAT = {"model": "fast-chat", "messages": HELLO}
MESSAGES = {"model": "fast-chat", "max_tokens": 32, "messages": HELLO}


def fast_router(**settings: Any) -> dict[str, Any]:
    """Short deadlines and no circuits opening, so hostile cases stay independent."""
    return router(circuit={"allowed_fails": 100}, **settings)


def inflight(view: TableView, deployment_id: str) -> int:
    """The deployment's in-flight count over every usage bucket."""
    return sum(
        items.get_int(i, "inflight")
        for i in view.scan()
        if i[view.schema.pk]["S"] == keys.deployment_pk(deployment_id)
        and i[view.schema.sk]["S"].startswith(keys.USAGE_PREFIX)
    )


def wait_idle(view: TableView, *deployment_ids: str) -> None:
    """Poll until no attempt is in flight on the deployments (outcome writes run after answers)."""
    wait_for(
        lambda: [inflight(view, d) for d in deployment_ids],
        lambda counts: all(c == 0 for c in counts),
        f"in-flight of {deployment_ids} back to 0",
    )


def openai_error(response: httpx.Response) -> dict[str, Any]:
    """The OpenAI error object of ``response`` (asserts the shape)."""
    body = response.json()
    assert set(body) == {"error"}, body
    error: dict[str, Any] = body["error"]
    assert {"message", "type", "param", "code"} <= set(error), body
    return error


def anthropic_error(response: httpx.Response) -> dict[str, Any]:
    """The Anthropic error object of ``response`` (asserts the shape)."""
    body = response.json()
    assert body.get("type") == "error", body
    error: dict[str, Any] = body["error"]
    assert isinstance(error.get("type"), str), body
    assert isinstance(error.get("message"), str), body
    return error


__all__ = ["config", "deployment"]
