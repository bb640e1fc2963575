"""Shared pieces of the client-key tests: a gateway with a bootstrap admin key, key calls."""

from __future__ import annotations

import secrets
from typing import Any

import httpx

from tests.fixtures.gateway import AUTH_REQUIRED
from tests.fixtures.secrets import remember

HELLO = [{"role": "user", "content": "Hello!"}]
ADMIN_KEY = remember("ep-test-bootstrap-" + secrets.token_urlsafe(16))
# Keys required, the bootstrap admin key behind an env: reference (as SSM on AWS).
ENV = {
    **AUTH_REQUIRED,
    "EDGEPROXY_TEST_ADMIN_KEY": ADMIN_KEY,
    "EDGEPROXY_ADMIN_KEY_REF": "env:EDGEPROXY_TEST_ADMIN_KEY",
}


def bearer(key: str | None) -> dict[str, str]:
    return {"authorization": f"Bearer {key}"} if key is not None else {}


def create_key(base_url: str, admin_key: str = ADMIN_KEY, **body: Any) -> dict[str, Any]:
    """Create a key through the admin API; returns the answer (its ``key`` remembered)."""
    answer = httpx.post(
        base_url + "/admin/keys",
        json={"name": "test", **body},
        headers=bearer(admin_key),
        timeout=10,
    )
    assert answer.status_code == 201, answer.text
    created: dict[str, Any] = answer.json()
    remember(created["key"])
    return created


def revoke_key(base_url: str, key_id: str) -> httpx.Response:
    return httpx.post(
        f"{base_url}/admin/keys/{key_id}/revoke", headers=bearer(ADMIN_KEY), timeout=10
    )


def chat(base_url: str, key: str | None, model: str = "fast-chat", **body: Any) -> httpx.Response:
    payload = {"model": model, "messages": HELLO, **body}
    return httpx.post(
        base_url + "/v1/chat/completions", json=payload, headers=bearer(key), timeout=30
    )
