"""``/admin/router-settings``: effective defaults, partial updates, versions, audit, reach."""

from __future__ import annotations

import threading
from typing import Any

import httpx
import pytest

from edgeproxy.config.router import RouterSettings
from edgeproxy_dev.mock_upstream import MockUpstream
from tests.fixtures.clock import FleetClock
from tests.fixtures.gateway import TEST_ENV
from tests.integration.admin.helpers import ADMIN_ACTOR, admin, ok, two_deployments

SETTINGS = "/admin/router-settings"


def _put(base_url: str, body: dict[str, Any], version: int | None = None) -> httpx.Response:
    headers = {} if version is None else {"if-match": f'"{version}"'}
    return admin(base_url, "PUT", SETTINGS, json=body, headers=headers)


def test_get_returns_the_effective_settings_with_defaults_and_the_version(
    start_gateway, upstream_a: MockUpstream, upstream_b: MockUpstream
) -> None:
    gw = start_gateway(two_deployments(upstream_a, upstream_b))

    answer = admin(gw.base_url, "GET", SETTINGS)
    body = ok(answer)

    version = body.pop("version")
    assert answer.headers["etag"] == f'"{version}"'
    assert RouterSettings.model_validate(body) == RouterSettings()
    assert body["circuit"]["allowed_fails"] == 3
    assert set(body["execution_policies"]) == {
        "chat",
        "embeddings",
        "images",
        "audio",
        "video_submit",
        "video_download",
        "responses",
        "completions",
    }


def test_a_partial_update_keeps_every_omitted_field(
    start_gateway, upstream_a: MockUpstream, upstream_b: MockUpstream
) -> None:
    gw = start_gateway(
        two_deployments(
            upstream_a,
            upstream_b,
            router={"circuit": {"allowed_fails": 7}, "max_fallback_depth": 2},
        )
    )
    before = ok(admin(gw.base_url, "GET", SETTINGS))

    after = ok(
        _put(
            gw.base_url,
            {"strategy": "least-busy", "circuit": {"cooldown_seconds": 11}},
            before["version"],
        )
    )

    assert after["version"] == before["version"] + 1
    assert after["strategy"] == "least-busy"
    assert after["circuit"]["cooldown_seconds"] == 11
    assert after["circuit"]["allowed_fails"] == 7  # omitted inside circuit: kept
    assert after["max_fallback_depth"] == 2  # omitted at the top: kept
    assert after["execution_policies"] == before["execution_policies"]
    assert ok(admin(gw.base_url, "GET", SETTINGS)) == after


def test_an_incomplete_execution_policy_matrix_is_refused_naming_the_operation(
    start_gateway, upstream_a: MockUpstream, upstream_b: MockUpstream
) -> None:
    gw = start_gateway(two_deployments(upstream_a, upstream_b))
    current = ok(admin(gw.base_url, "GET", SETTINGS))
    matrix = dict(current["execution_policies"])
    del matrix["images"]

    answer = _put(gw.base_url, {"execution_policies": matrix}, current["version"])

    assert answer.status_code == 400
    error = answer.json()["error"]
    assert error["type"] == "invalid_request_error"
    assert "images" in error["message"]
    assert "chat" not in error["message"]
    assert ok(admin(gw.base_url, "GET", SETTINGS))["version"] == current["version"]


def test_bad_values_and_unknown_fields_are_400s_naming_the_field(
    start_gateway, upstream_a: MockUpstream, upstream_b: MockUpstream
) -> None:
    gw = start_gateway(two_deployments(upstream_a, upstream_b))
    version = ok(admin(gw.base_url, "GET", SETTINGS))["version"]

    for body, field in (
        ({"circuit": {"allowed_fails": -1}}, "circuit.allowed_fails"),
        ({"strategy": "fastest"}, "strategy"),
        ({"circuit": {"alowed_fails": 1}}, "circuit.alowed_fails"),
    ):
        answer = _put(gw.base_url, body, version)
        assert answer.status_code == 400, answer.text
        assert answer.json()["error"]["param"] == field
    assert admin(gw.base_url, "PUT", SETTINGS, content=b"[1]").status_code == 400


def test_a_write_without_a_version_wins_and_a_stale_one_is_409(
    start_gateway, upstream_a: MockUpstream, upstream_b: MockUpstream
) -> None:
    gw = start_gateway(two_deployments(upstream_a, upstream_b))
    version = ok(admin(gw.base_url, "GET", SETTINGS))["version"]

    # 000's clients send no version: last writer wins (the versioned form is recommended).
    unconditional = ok(_put(gw.base_url, {"strategy": "least-busy"}))
    assert unconditional["version"] == version + 1

    stale = admin(
        gw.base_url, "PUT", SETTINGS, json={"strategy": "price-based", "version": version}
    )
    assert (stale.status_code, stale.json()["error"]["code"]) == (409, "version_conflict")
    assert ok(admin(gw.base_url, "GET", SETTINGS))["strategy"] == "least-busy"


def test_two_concurrent_writes_of_one_version_end_with_exactly_one_409(
    start_gateway, upstream_a: MockUpstream, upstream_b: MockUpstream
) -> None:
    gw = start_gateway(two_deployments(upstream_a, upstream_b))
    version = ok(admin(gw.base_url, "GET", SETTINGS))["version"]
    barrier = threading.Barrier(2)
    statuses: dict[str, int] = {}

    def write(strategy: str) -> None:
        with httpx.Client(timeout=30) as http:
            barrier.wait()
            answer = http.put(
                gw.base_url + SETTINGS,
                json={"strategy": strategy, "version": version},
                headers={"authorization": "Bearer sk-admin-operator"},
            )
            statuses[strategy] = answer.status_code

    threads = [threading.Thread(target=write, args=(s,)) for s in ("least-busy", "price-based")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert sorted(statuses.values()) == [200, 409]
    winner = next(s for s, code in statuses.items() if code == 200)
    after = ok(admin(gw.base_url, "GET", SETTINGS))
    assert (after["strategy"], after["version"]) == (winner, version + 1)


def test_concurrent_unconditional_writes_all_land_none_lost(
    start_gateway, upstream_a: MockUpstream, upstream_b: MockUpstream
) -> None:
    # Four versionless writes of different fields at once: each is applied over whatever
    # landed before it (no 409, no 428), so every field ends up written.
    gw = start_gateway(two_deployments(upstream_a, upstream_b))
    version = ok(admin(gw.base_url, "GET", SETTINGS))["version"]
    bodies = [
        {"allowedFails": 7},
        {"cooldownSeconds": 11},
        {"retryAfterSeconds": 2},
        {"routingStrategy": "least-busy"},
    ]
    barrier = threading.Barrier(len(bodies))
    statuses: list[int] = []

    def write(body: dict[str, Any]) -> None:
        with httpx.Client(timeout=30) as http:
            barrier.wait()
            answer = http.put(
                gw.base_url + SETTINGS,
                json=body,
                headers={"authorization": "Bearer sk-admin-operator"},
            )
            statuses.append(answer.status_code)

    threads = [threading.Thread(target=write, args=(b,)) for b in bodies]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert statuses == [200] * len(bodies)
    after = ok(admin(gw.base_url, "GET", SETTINGS))
    circuit = after["circuit"]
    assert (circuit["allowed_fails"], circuit["cooldown_seconds"]) == (7, 11)
    assert (circuit["retry_after_seconds"], after["strategy"]) == (2, "least-busy")
    assert after["version"] == version + len(bodies)


def test_every_change_is_an_audit_entry_naming_the_admin_and_the_diff(
    start_gateway, upstream_a: MockUpstream, upstream_b: MockUpstream
) -> None:
    gw = start_gateway(two_deployments(upstream_a, upstream_b))
    version = ok(admin(gw.base_url, "GET", SETTINGS))["version"]
    ok(_put(gw.base_url, {"circuit": {"cooldown_seconds": 9}}, version))
    ok(_put(gw.base_url, {"strategy": "least-busy"}, version + 1))
    ok(_put(gw.base_url, {"strategy": "least-busy"}, version + 2))  # no change: no entry

    entries = ok(admin(gw.base_url, "GET", "/admin/audit?limit=2"))
    newest, older = entries["data"]

    assert (newest["actor"], newest["action"], newest["version"]) == (
        ADMIN_ACTOR,
        "router-settings.update",
        version + 2,
    )
    assert newest["changes"] == [
        {"path": "router.strategy", "old": "simple-shuffle", "new": "least-busy"}
    ]
    assert older["changes"] == [{"path": "router.circuit.cooldown_seconds", "old": 5, "new": 9}]
    assert newest["at"] >= older["at"]
    page = ok(admin(gw.base_url, "GET", f"/admin/audit?limit=2&before={entries['next']}"))
    # The test's initial store, and the import of its admin entry as a table key.
    assert [e["action"] for e in page["data"]] == ["config.load", "key.import"]
    assert "sk-admin-operator" not in str(entries)


def _strategy_seen_by(base_url: str) -> str:
    routed = httpx.post(
        base_url + "/v1/chat/completions",
        json={"model": "fast-chat", "messages": [{"role": "user", "content": "hi"}]},
        headers={"authorization": "Bearer sk-client-plain", "x-unified-routing-metadata": "true"},
        timeout=30,
    )
    strategy: str = routed.json()["unified_routing"]["strategy"]
    return strategy


def test_a_change_reaches_a_second_gateway_process_within_the_cache_ttl(
    start_gateway,
    spawn_gateway,
    clock: FleetClock,
    monkeypatch: pytest.MonkeyPatch,
    upstream_a: MockUpstream,
    upstream_b: MockUpstream,
) -> None:
    monkeypatch.setitem(TEST_ENV, "EDGEPROXY_CONFIG_TTL_SECONDS", "30")
    # No sticky bindings: every request runs the strategy (the metadata names it).
    gw = start_gateway(
        two_deployments(upstream_a, upstream_b, router={"sticky": {"enabled": False}})
    )
    other = spawn_gateway(None)
    assert _strategy_seen_by(other.base_url) == "simple-shuffle"  # cached from now on
    version = ok(admin(gw.base_url, "GET", SETTINGS))["version"]

    ok(_put(gw.base_url, {"strategy": "least-busy"}, version))

    assert _strategy_seen_by(gw.base_url) == "least-busy"  # the writer re-reads at once
    clock.advance(20)
    assert _strategy_seen_by(other.base_url) == "simple-shuffle"  # within its TTL: old
    clock.advance(10.5)
    assert _strategy_seen_by(other.base_url) == "least-busy"  # TTL over: the new settings


def test_the_platform_ceiling_on_deadlines_is_shown_and_a_round_trip_put_keeps_working(
    start_gateway, upstream_a: MockUpstream, upstream_b: MockUpstream
) -> None:
    # Behind API Gateway the template sets this: every total_ms is capped below 30 s.
    gw = start_gateway(
        two_deployments(upstream_a, upstream_b), env={"EDGEPROXY_MAX_TOTAL_MS": "27000"}
    )
    body = ok(admin(gw.base_url, "GET", SETTINGS))
    assert body["platform"] == {"max_total_ms": 27000}
    assert body["execution_policies"]["chat"]["json"]["total_ms"] > 27000  # configured, not capped
    version = body.pop("version")
    # Sending the whole document back (platform included) is a valid, empty change.
    assert _put(gw.base_url, body, version).status_code == 200
