"""Spec rows issue 24 found partial, observed at the API of a running gateway."""

from __future__ import annotations

import json
from typing import Any

import httpx

from edgeproxy.routing.estimates.tokens import unreported_usage
from edgeproxy_dev.mock_upstream import MockUpstream
from tests.fixtures.table import wait_for
from tests.integration.admin.helpers import CLIENT_KEY, admin, ok, two_deployments


def _put(base_url: str, body: dict[str, Any]) -> httpx.Response:
    version = int(ok(admin(base_url, "GET", "/admin/router-settings"))["version"])
    return _put_at(base_url, body, version)


def _put_at(base_url: str, body: dict[str, Any], version: int) -> httpx.Response:
    return admin(
        base_url, "PUT", "/admin/router-settings", json=body, headers={"if-match": f'"{version}"'}
    )


# 000's "Configuring it" body, exactly as its docs send it (no version: 000 has none).
SPEC_BODY: dict[str, Any] = {
    "routingStrategy": "latency-based",
    "allowedFails": 3,
    "cooldownSeconds": 10,
    "failureWindowSeconds": 60,
    "maxCooldownSeconds": 300,
    "halfOpenProbeSeconds": 30,
    "configurationCooldownSeconds": 300,
    "throttleCooldownSeconds": 5,
    "retryAfterSeconds": 1,
}


def test_the_primary_specs_documented_put_works_unchanged_without_a_version(
    start_gateway: Any, upstream_a: MockUpstream, upstream_b: MockUpstream
) -> None:
    base = start_gateway(two_deployments(upstream_a, upstream_b)).base_url
    before = int(ok(admin(base, "GET", "/admin/router-settings"))["version"])
    # As 000's curl sends it: JSON body, bearer key, no If-Match and no version field.
    answer = admin(
        base,
        "PUT",
        "/admin/router-settings",
        content=json.dumps(SPEC_BODY).encode(),
        headers={"content-type": "application/json"},
    )
    settings = ok(answer)
    assert settings["version"] == before + 1
    assert settings["strategy"] == "latency-based"
    assert (
        settings["circuit"]["cooldown_seconds"],
        settings["circuit"]["retry_after_seconds"],
    ) == (
        10,
        1,
    )
    # Audited, and as unconditional: nobody can tell from a versioned entry that it was one.
    [entry] = ok(admin(base, "GET", "/admin/audit?limit=1"))["data"]
    assert (entry["action"], entry["target"], entry["version"]) == (
        "router-settings.update.unconditional",
        "router",
        before + 1,
    )
    assert {"path": "router.strategy", "old": "simple-shuffle", "new": "latency-based"} in entry[
        "changes"
    ]
    # Last writer wins: a second unconditional write over the first, no 409 and no 428.
    again = ok(admin(base, "PUT", "/admin/router-settings", json={"cooldownSeconds": 12}))
    assert (again["circuit"]["cooldown_seconds"], again["strategy"]) == (12, "latency-based")
    # The versioned form still refuses a stale version.
    stale = _put_at(base, {"cooldownSeconds": 7}, before)
    assert (stale.status_code, stale.json()["error"]["code"]) == (409, "version_conflict")


def test_get_answers_in_the_primary_specs_field_names_when_asked(
    start_gateway: Any, upstream_a: MockUpstream, upstream_b: MockUpstream
) -> None:
    base = start_gateway(two_deployments(upstream_a, upstream_b)).base_url
    ok(admin(base, "PUT", "/admin/router-settings", json=SPEC_BODY))
    answer = admin(base, "GET", "/admin/router-settings?names=000")
    spec = ok(answer)
    for name, value in SPEC_BODY.items():  # what a 000 client wrote, it reads back by name
        assert spec[name] == value, name
    assert "strategy" not in spec
    assert "allowed_fails" not in spec["circuit"]  # each setting under one name only
    assert spec["circuit"]["max_probe_interval_seconds"] is None  # edgeproxy's own, by its name
    chat = spec["executionPolicies"]["chat"]["json"]
    assert set(chat) == {"responseMs", "idleMs", "totalMs", "maxAttempts"}
    assert answer.headers["etag"] == f'"{spec["version"]}"'
    # The answer goes back as a PUT body unchanged (its version makes it a versioned write).
    same = ok(admin(base, "PUT", "/admin/router-settings", json=spec))
    assert same["version"] == spec["version"]  # nothing changed, nothing written
    # The default stays edgeproxy's names; an unknown choice is a 400 naming the parameter.
    assert ok(admin(base, "GET", "/admin/router-settings"))["strategy"] == "latency-based"
    bad = admin(base, "GET", "/admin/router-settings?names=camel")
    assert (bad.status_code, bad.json()["error"]["param"]) == (400, "names")


def test_router_settings_take_the_primary_specs_field_names(
    start_gateway: Any, upstream_a: MockUpstream, upstream_b: MockUpstream
) -> None:
    base = start_gateway(two_deployments(upstream_a, upstream_b)).base_url
    settings = ok(_put(base, SPEC_BODY))
    assert settings["strategy"] == "latency-based"
    circuit = settings["circuit"]
    assert (circuit["cooldown_seconds"], circuit["retry_after_seconds"]) == (10, 1)
    assert circuit["max_probe_interval_seconds"] is None  # not named: kept
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
