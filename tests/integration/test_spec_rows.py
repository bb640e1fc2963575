"""Spec rows issue 24 found partial, observed at the API of a running gateway."""

from __future__ import annotations

from typing import Any

import httpx

from edgeproxy_dev.mock_upstream import MockUpstream
from tests.integration.admin.helpers import admin, ok, two_deployments


def _put(base_url: str, body: dict[str, Any]) -> httpx.Response:
    version = int(ok(admin(base_url, "GET", "/admin/router-settings"))["version"])
    return admin(
        base_url, "PUT", "/admin/router-settings", json=body, headers={"if-match": f'"{version}"'}
    )


def test_router_settings_take_the_primary_specs_field_names(
    start_gateway: Any, upstream_a: MockUpstream, upstream_b: MockUpstream
) -> None:
    base = start_gateway(two_deployments(upstream_a, upstream_b)).base_url
    # 000's own example body, as its docs send it.
    answer = _put(
        base,
        {
            "routingStrategy": "latency-based",
            "allowedFails": 3,
            "cooldownSeconds": 10,
            "failureWindowSeconds": 60,
            "maxCooldownSeconds": 300,
            "halfOpenProbeSeconds": 30,
            "configurationCooldownSeconds": 300,
            "throttleCooldownSeconds": 5,
            "retryAfterSeconds": 1,
        },
    )
    settings = ok(answer)
    assert settings["strategy"] == "latency-based"
    circuit = settings["circuit"]
    assert (circuit["cooldown_seconds"], circuit["retry_after_seconds"]) == (10, 1)
    assert circuit["max_probe_interval_seconds"] == 20  # not named: kept
    # The execution matrix in 000's spelling: its deadline fields in camelCase.
    current = ok(admin(base, "GET", "/admin/router-settings"))["execution_policies"]
    spec = {
        op: {
            mode: {
                "responseMs": d["response_ms"],
                "idleMs": d["idle_ms"],
                "totalMs": d["total_ms"],
                "maxAttempts": 2 if op == "chat" else d["max_attempts"],
            }
            for mode, d in modes.items()
        }
        for op, modes in current.items()
    }
    after = ok(_put(base, {"executionPolicies": spec}))
    assert after["execution_policies"]["chat"]["json"]["max_attempts"] == 2
    # Both spellings of one field: a 400 naming it, nothing written.
    twice = _put(base, {"cooldownSeconds": 7, "circuit": {"cooldown_seconds": 8}})
    assert twice.status_code == 400
    assert "cooldownSeconds" in twice.json()["error"]["message"]
    assert ok(admin(base, "GET", "/admin/router-settings"))["circuit"]["cooldown_seconds"] == 10
    # An unknown camelCase name is still an unknown field.
    assert _put(base, {"allowedFailz": 1}).status_code == 400


def test_health_reports_routes_configured(
    start_gateway: Any, upstream_a: MockUpstream, upstream_b: MockUpstream
) -> None:
    base = start_gateway(two_deployments(upstream_a, upstream_b)).base_url
    admin(base, "GET", "/admin/router-settings")  # any request loads the configuration
    answer = httpx.get(base + "/health", timeout=30)
    assert answer.status_code == 200
    assert answer.json() == {"status": "ok", "routes_configured": 2}
