"""Shared pieces of the admin API tests: keys, a small client, a two-deployment config."""

from __future__ import annotations

import hashlib
from typing import Any

import httpx

from edgeproxy.routing.access import key_id_of
from edgeproxy_dev.mock_upstream import MockUpstream
from tests.fixtures.configs import config, deployment

ADMIN_KEY = "sk-admin-operator"
CLIENT_KEY = "sk-client-plain"
# The owner's seed imports the YAML admin entry as a table key: audits name it by name and id.
ADMIN_ACTOR = f"ops ({key_id_of(hashlib.sha256(ADMIN_KEY.encode()).hexdigest())})"


def keys() -> dict[str, Any]:
    """A ``gateway`` section with an admin key (named ``ops``) and a client key.

    The admin entry becomes a table admin key when the test's owner stores the
    configuration (``service/admin/owner_guard``): a revocable admin key.
    """
    return {
        "api_keys": [
            {"name": "client", "sha256": hashlib.sha256(CLIENT_KEY.encode()).hexdigest()},
            {
                "name": "ops",
                "sha256": hashlib.sha256(ADMIN_KEY.encode()).hexdigest(),
                "admin": True,
            },
        ]
    }


def two_deployments(a: MockUpstream, b: MockUpstream, **sections: Any) -> dict[str, Any]:
    """``fast-chat`` served by ``a`` (tried first: higher priority) and ``b``."""
    return config(
        deployment("a", a, priority=1, rpm_limit=100),
        deployment("b", b),
        gateway=keys(),
        **sections,
    )


def admin(
    base_url: str, method: str, path: str, *, key: str = ADMIN_KEY, **kwargs: Any
) -> httpx.Response:
    """One admin API call with ``key``."""
    headers = {"authorization": f"Bearer {key}", **kwargs.pop("headers", {})}
    return httpx.request(method, base_url + path, headers=headers, timeout=30, **kwargs)


def ok(answer: httpx.Response, status: int = 200) -> dict[str, Any]:
    """The JSON of an answer that must have ``status``."""
    assert answer.status_code == status, answer.text
    body: dict[str, Any] = answer.json()
    return body


def chat(base_url: str, model: str = "fast-chat") -> httpx.Response:
    """One chat request with the client key."""
    return httpx.post(
        base_url + "/v1/chat/completions",
        json={"model": model, "messages": [{"role": "user", "content": "hi"}]},
        headers={"authorization": f"Bearer {CLIENT_KEY}"},
        timeout=30,
    )
