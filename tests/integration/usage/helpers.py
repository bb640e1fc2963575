"""Shared pieces of the request-log tests: a keyed gateway with priced deployments, reads."""

from __future__ import annotations

from typing import Any

import httpx

from edgeproxy_dev.mock_upstream import MockUpstream
from tests.fixtures.configs import config, deployment
from tests.fixtures.table import wait_for
from tests.integration.keys.helpers import ADMIN_KEY, ENV, bearer, create_key
from tests.integration.resilience.helpers import router

# Prices that make every token count: cents per answer (the mock answers a few tokens).
PRICES = {"input_price_per_mtok": 1500.0, "output_price_per_mtok": 7000.0}
HELLO = [{"role": "user", "content": "Hello!"}]

__all__ = ["ADMIN_KEY", "ENV", "create_key"]


def priced(dep_id: str, upstream: MockUpstream, **fields: Any) -> dict[str, Any]:
    """A deployment of ``fast-chat`` with ``PRICES`` (different ones via ``fields``)."""
    return deployment(dep_id, upstream, **{**PRICES, **fields})


def gateway_config(*deployments: dict[str, Any], **sections: Any) -> dict[str, Any]:
    """A configuration with short deadlines (``router``) unless the test gives its own."""
    sections.setdefault("router", router())
    return config(*deployments, **sections)


def chat(base_url: str, key: str, *, stream: bool = False, **body: Any) -> httpx.Response:
    payload = {"model": "fast-chat", "messages": HELLO, "stream": stream, **body}
    return httpx.post(
        base_url + "/v1/chat/completions", json=payload, headers=bearer(key), timeout=30
    )


def admin_get(base_url: str, path: str, **params: Any) -> httpx.Response:
    return httpx.get(base_url + path, params=params, headers=bearer(ADMIN_KEY), timeout=30)


def records(base_url: str, at: float, count: int) -> list[dict[str, Any]]:
    """The log records of the hour of ``at`` once there are ``count`` (newest first)."""

    def read() -> list[dict[str, Any]]:
        answer = admin_get(base_url, "/admin/usage/requests", at=str(at), limit="1000")
        assert answer.status_code == 200, answer.text
        data: list[dict[str, Any]] = answer.json()["data"]
        return data

    return wait_for(read, lambda found: len(found) >= count, f"{count} log records")


def one_record(base_url: str, at: float) -> dict[str, Any]:
    [record] = records(base_url, at, 1)
    return record


def key_spend(base_url: str, key_id: str) -> float:
    answer = admin_get(base_url, f"/admin/keys/{key_id}")
    assert answer.status_code == 200, answer.text
    return float(answer.json()["spend_usd"])


def new_key(base_url: str, name: str = "billing-app", **fields: Any) -> dict[str, Any]:
    return create_key(base_url, name=name, **fields)
