"""``GET /health/deep``: each deployment's standing, including consecutive credential rejections."""

from __future__ import annotations

from typing import Any

from edgeproxy_dev.mock_upstream import MockUpstream
from tests.fixtures.clock import FleetClock
from tests.fixtures.table import wait_for
from tests.integration.admin.helpers import admin, chat, ok, two_deployments

FIELDS = {
    "id",
    "status",
    "available",
    "circuit",
    "limit",
    "retry_after_ms",
    "health_score",
    "health_updated_at",
    "rpm",
    "tpm",
    "inflight",
    "credential_rejections",
}


def _rows(base_url: str) -> dict[str, dict[str, Any]]:
    report = ok(admin(base_url, "GET", "/health/deep"))
    return {row["id"]: row for pool in report["pools"] for row in pool["deployments"]}


def test_deep_health_reports_every_deployment(
    start_gateway, clock: FleetClock, upstream_a: MockUpstream, upstream_b: MockUpstream
) -> None:
    gw = start_gateway(
        two_deployments(upstream_a, upstream_b, router={"sticky": {"enabled": False}})
    )
    # The usage read is the current minute's: start one, so the wait below stays inside it.
    clock.advance(60 - clock.now() % 60 + 1)
    assert chat(gw.base_url).status_code == 200

    report = ok(admin(gw.base_url, "GET", "/health/deep"))

    assert report["status"] == "ok"
    assert report["config_version"] >= 1
    assert [p["pool"] for p in report["pools"]] == ["fast-chat"]
    a = wait_for(lambda: _rows(gw.base_url)["a"], lambda r: r["tpm"]["used"] > 0, "usage")
    assert set(a) == FIELDS
    assert (a["status"], a["available"], a["retry_after_ms"]) == ("available", True, 0)
    assert a["circuit"] == {"state": "closed", "cause": None, "reason": None}
    assert a["health_score"] == 0.5  # the health job has not scored it yet: neutral
    assert a["rpm"] == {"used": 1, "limit": 100}
    assert a["tpm"]["limit"] is None
    assert a["credential_rejections"] == 0


def test_credential_rejections_count_degrade_and_reset_on_success(
    start_gateway, clock: FleetClock, upstream_a: MockUpstream, upstream_b: MockUpstream
) -> None:
    gw = start_gateway(
        two_deployments(upstream_a, upstream_b, router={"sticky": {"enabled": False}})
    )
    upstream_a.set_faults([], persistent={"status": 401})

    assert chat(gw.base_url).headers["x-edgeproxy-deployment"] == "b"  # a refused the key

    a = wait_for(
        lambda: _rows(gw.base_url)["a"], lambda r: r["credential_rejections"] == 1, "count"
    )
    assert (a["status"], a["circuit"]["cause"]) == ("cooldown", "configuration")
    assert a["retry_after_ms"] > 0
    assert ok(admin(gw.base_url, "GET", "/health/deep"))["status"] == "degraded"

    clock.advance(301)  # the configuration quarantine is over: one probe fails again
    assert chat(gw.base_url).headers["x-edgeproxy-deployment"] == "b"
    wait_for(lambda: _rows(gw.base_url)["a"], lambda r: r["credential_rejections"] == 2, "count")

    upstream_a.clear()
    clock.advance(301)
    assert chat(gw.base_url).headers["x-edgeproxy-deployment"] == "a"  # credentials fixed
    a = wait_for(
        lambda: _rows(gw.base_url)["a"], lambda r: r["credential_rejections"] == 0, "reset"
    )
    assert a["status"] == "available"


def test_deep_health_ignores_a_quota_reading_older_than_quota_max_age(
    start_gateway, clock: FleetClock, upstream_a: MockUpstream, upstream_b: MockUpstream
) -> None:
    cfg = two_deployments(upstream_a, upstream_b, router={"sticky": {"enabled": False}})
    gw = start_gateway({**cfg, "quota_max_age_seconds": 60})
    spent = {"x-ratelimit-remaining-requests": "0", "x-ratelimit-reset-requests": "1h"}
    upstream_a.set_faults([{"headers": spent}])
    assert chat(gw.base_url).headers["x-edgeproxy-deployment"] == "a"
    a = wait_for(lambda: _rows(gw.base_url)["a"], lambda r: r["limit"] == "quota", "spent")
    assert a["available"] is False

    clock.advance(90)  # past quota_max_age_seconds (60), well inside the default 600
    a = _rows(gw.base_url)["a"]
    assert (a["status"], a["available"], a["limit"]) == ("available", True, None)
    assert ok(admin(gw.base_url, "GET", "/health/deep"))["status"] == "ok"
