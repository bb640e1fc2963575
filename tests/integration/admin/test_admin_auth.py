"""Every admin route (and /health/deep) needs an admin key: 401 without one, 403 for a client key."""

from __future__ import annotations

import re

import httpx

from edgeproxy.api.admin.routes import admin_routes
from edgeproxy_dev.mock_upstream import MockUpstream
from tests.integration.admin.helpers import CLIENT_KEY, two_deployments

REFUSALS = [
    ("missing", {}, 401),
    ("malformed scheme", {"authorization": "Basic c2stYWRtaW4="}, 401),
    ("bearer without a key", {"authorization": "Bearer"}, 401),
    ("malformed x-api-key", {"x-api-key": "not a key"}, 401),
    ("unknown key", {"authorization": "Bearer sk-nobody"}, 401),
    ("client key", {"authorization": f"Bearer {CLIENT_KEY}"}, 403),
]


def _path(template: str) -> str:
    return re.sub(r"{(\w+)(?::\w+)?}", lambda m: {"reason": "general"}.get(m[1], "a"), template)


def test_the_route_table_covers_the_admin_api() -> None:
    paths = {r.path for r in admin_routes()}
    assert {
        "/admin/router-settings",
        "/admin/audit",
        "/health/deep",
        "/metrics",
        "/admin/openapi.json",
    } <= paths
    assert all(p.startswith(("/admin/", "/health/deep", "/metrics")) for p in paths)


def test_every_admin_route_refuses_callers_without_an_admin_key(
    start_gateway, upstream_a: MockUpstream, upstream_b: MockUpstream
) -> None:
    gw = start_gateway(two_deployments(upstream_a, upstream_b))
    with httpx.Client(base_url=gw.base_url, timeout=10) as client:
        for case, headers, status in REFUSALS:
            for route in admin_routes():
                answer = client.request(
                    route.method,
                    _path(route.path),
                    headers={**headers, "if-match": '"1"'},
                    json={"version": 1} if route.method in ("PUT", "POST", "PATCH") else None,
                )
                where = f"{case}: {route.method} {route.path}: {answer.text}"
                assert answer.status_code == status, where
                error = answer.json()["error"]
                assert set(error) == {"message", "type", "param", "code"}, where
                code = "permission_denied" if status == 403 else "invalid_api_key"
                assert error["code"] == code, where
