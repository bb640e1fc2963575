"""Every method on every route: an answer in the surface's format, never a 500.

The route list is the app's own (the ``/v1`` surface and every admin route
of ``admin_routes``), so a route added later is covered without editing
this file. Each is asked with every method, with no key, a client key and
an admin key. ``HEAD`` must answer like ``GET`` (its status, no body):
before, ``HEAD`` on an admin route was a plain-text 500 with a traceback.
"""

from __future__ import annotations

import hashlib
import re

import httpx
import pytest

from edgeproxy.api.admin.routes import admin_routes
from edgeproxy_dev.mock_upstream import MockUpstream
from tests.fixtures.gateway import GatewayServer
from tests.integration.hardening.helpers import anthropic_error, config, deployment, openai_error

CLIENT_KEY = "sk-methods-client-0123456789"
ADMIN_KEY = "sk-methods-admin-0123456789"
METHODS = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "TRACE"]
V1 = [
    "/v1/chat/completions", "/v1/completions", "/v1/embeddings", "/v1/messages",
    "/v1/messages/count_tokens", "/v1/responses", "/v1/models", "/v1/models/fast-chat",
    "/v1/models/fast-chat/deployments", "/health", "/admin", "/admin/", "/admin/assets/app.js",
    "/admin/no-such-route", "/v2/none",
]  # fmt: skip
PUBLIC = {
    "/admin/",
    "/admin/assets/app.js",
}  # the status page's static files (its data needs a key)
KEYS = {"none": None, "client": CLIENT_KEY, "admin": ADMIN_KEY}


def paths() -> list[str]:
    """Every admin route with its parameters filled in (an unknown id: a 404 is fine)."""
    filled = {re.sub(r"\{[^}]+\}", "fast-chat", r.path) for r in admin_routes()}
    return sorted(filled) + V1


@pytest.fixture
def gateway(start_gateway, upstream_a: MockUpstream) -> GatewayServer:  # type: ignore[no-untyped-def]
    keys = [
        {"name": "client", "sha256": hashlib.sha256(CLIENT_KEY.encode()).hexdigest()},
        {"name": "ops", "sha256": hashlib.sha256(ADMIN_KEY.encode()).hexdigest(), "admin": True},
    ]
    return start_gateway(config(deployment("a", upstream_a), gateway={"api_keys": keys}))


def in_format(path: str, answer: httpx.Response) -> None:
    if answer.status_code < 400:
        return
    if path == "/v1/messages" or path.startswith("/v1/messages/"):
        anthropic_error(answer)
    else:
        openai_error(answer)


def test_every_method_on_every_route_answers_in_format(gateway: GatewayServer) -> None:
    seen: dict[int, int] = {}
    with httpx.Client(base_url=gateway.base_url, timeout=30) as client:
        for path in paths():
            for who, key in KEYS.items():
                headers = {"authorization": f"Bearer {key}"} if key else {}
                get = client.get(path, headers=headers)
                for method in METHODS:
                    body = b"{}" if method in ("POST", "PUT", "PATCH") else None
                    answer = client.request(method, path, headers=headers, content=body)
                    where = (method, path, who, answer.status_code, answer.text[:200])
                    assert answer.status_code < 500, where
                    seen[answer.status_code] = seen.get(answer.status_code, 0) + 1
                    if method == "HEAD":
                        assert answer.status_code == get.status_code, where
                        assert answer.content == b"", where
                    else:
                        in_format(path, answer)
                    if who == "none" and path not in PUBLIC and path.startswith("/admin/"):
                        assert answer.status_code in (401, 404, 405), where
    # The classes the route table must produce: refusals of each kind, and plain successes.
    assert {200, 401, 403, 404, 405} <= set(seen), seen
