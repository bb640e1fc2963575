"""Spec rows issue 24 found partial, observed at the API of a running gateway."""

from __future__ import annotations

import json
from typing import Any

import httpx

from edgeproxy.routing.tokens import unreported_usage
from edgeproxy_dev.mock_upstream import MockUpstream
from tests.fixtures.table import wait_for
from tests.integration.admin.helpers import CLIENT_KEY, admin, ok, two_deployments


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


def _tpm_used(base_url: str, deployment_id: str) -> int:
    report = ok(admin(base_url, "GET", "/health/deep"))
    rows = [row for pool in report["pools"] for row in pool["deployments"]]
    return int(next(r for r in rows if r["id"] == deployment_id)["tpm"]["used"])


def test_an_openai_compat_stream_without_stream_usage_counts_its_estimate(
    start_gateway: Any, upstream_a: MockUpstream, upstream_b: MockUpstream
) -> None:
    base = start_gateway(two_deployments(upstream_a, upstream_b)).base_url
    body = {"model": "fast-chat", "messages": [{"role": "user", "content": "Hi there"}]}
    with httpx.stream(
        "POST",
        base + "/v1/chat/completions",
        json={**body, "stream": True},
        headers={"authorization": f"Bearer {CLIENT_KEY}"},
        timeout=30,
    ) as answer:
        assert answer.status_code == 200
        lines = [line for line in answer.iter_lines() if line.startswith("data: {")]
    [sent] = [r for r in upstream_a.requests() if r["path"] == "/v1/chat/completions"]
    assert "stream_options" not in sent["body"]  # openai_compat: not asked for usage
    text = "".join(
        json.loads(line.removeprefix("data: "))["choices"][0]["delta"].get("content") or ""
        for line in lines
    )
    assert text.startswith("Hello from a!")
    expected = sum(unreported_usage(body, text))
    assert expected > 0
    wait_for(lambda: _tpm_used(base, "a"), lambda used: used == expected, "tokens counted")
