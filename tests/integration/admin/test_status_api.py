"""``/admin/status`` and ``/admin/history`` (the status page's data) and how ``/admin/`` is served."""

from __future__ import annotations

from typing import Any

import httpx

from edgeproxy.api.admin.page import CSP
from edgeproxy_dev.mock_upstream import MockUpstream
from tests.fixtures.clock import FleetClock
from tests.fixtures.table import wait_for
from tests.integration.admin.helpers import ADMIN_KEY, admin, chat, ok, two_deployments

STRICT = {
    "content-security-policy": CSP,
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
    "cache-control": "no-store",
}


def _rows(base_url: str) -> dict[str, dict[str, Any]]:
    report = ok(admin(base_url, "GET", "/admin/status"))
    return {row["id"]: row for pool in report["pools"] for row in pool["deployments"]}


def test_status_shows_what_deep_health_shows_and_more(
    start_gateway, upstream_a: MockUpstream, upstream_b: MockUpstream
) -> None:
    gw = start_gateway(
        two_deployments(upstream_a, upstream_b, router={"sticky": {"enabled": False}})
    )
    assert chat(gw.base_url).status_code == 200

    a = wait_for(lambda: _rows(gw.base_url)["a"], lambda r: r["quota"] is not None, "quota")
    deep = ok(admin(gw.base_url, "GET", "/health/deep"))["pools"][0]["deployments"][0]
    assert set(deep) <= set(a)
    assert (a["status"], a["weight"], a["priority"]) == ("available", 1.0, 1)
    assert a["circuit"]["state"] == "closed"
    assert a["circuit"]["open_until"] is None
    assert a["ewma_latency_ms"] is None  # the health job has not run
    # The answer's rate-limit headers were captured as the credential's quota.
    units = {u["unit"]: u for u in a["quota"]["units"]}
    assert units["requests"]["source"] == "headers"
    assert units["requests"]["limit"] == 10_000
    assert units["requests"]["age_s"] >= 0
    report = ok(admin(gw.base_url, "GET", "/admin/status"))
    pool = report["pools"][0]
    assert (pool["pool"], pool["strategy"], pool["sticky"]["enabled"]) == (
        "fast-chat",
        "simple-shuffle",
        False,
    )


def test_history_counts_failures_by_class_and_the_median_per_minute(
    start_gateway, clock: FleetClock, upstream_a: MockUpstream, upstream_b: MockUpstream
) -> None:
    gw = start_gateway(
        two_deployments(upstream_a, upstream_b, router={"sticky": {"enabled": False}})
    )
    upstream_a.set_faults([{"status": 500}])
    assert chat(gw.base_url).headers["x-edgeproxy-deployment"] == "b"  # a failed over to b
    clock.advance(60)
    upstream_b.set_faults([{"latency_ms": 300}])
    upstream_a.set_faults([{"status": 429, "retry_after": "1"}])
    assert chat(gw.base_url).headers["x-edgeproxy-deployment"] == "b"

    def history() -> dict[str, Any]:
        found = ok(admin(gw.base_url, "GET", "/admin/history?pool=fast-chat&minutes=5"))
        return {d["id"]: d for d in found["deployments"]}

    rows = wait_for(history, lambda h: sum(h["b"]["successes"]) == 2, "successes")
    a, b = rows["a"], rows["b"]
    assert len(a["requests"]) == 5
    # Positions, not fixed indexes: real time may cross a minute boundary meanwhile.
    first = a["failures"]["transient"].index(1)
    assert sum(a["failures"]["transient"]) == 1
    assert a["failures"]["throttle"][first + 1] == 1
    assert sum(a["failures"]["throttle"]) == 1
    assert b["requests"][first : first + 2] == [1, 1]
    assert b["p50_ms"][first] is not None
    assert b["p50_ms"][first] <= 250
    assert 250 <= b["p50_ms"][first + 1] <= 500  # the slow answer's bucket
    assert b["p50_ms"][:first] == [None] * first  # no success in those minutes
    assert b["tokens"][first + 1] > 0


def test_status_and_history_need_an_admin_key_and_say_what_is_wrong(
    start_gateway, upstream_a: MockUpstream, upstream_b: MockUpstream
) -> None:
    gw = start_gateway(two_deployments(upstream_a, upstream_b))
    assert httpx.get(gw.base_url + "/admin/status").status_code == 401
    assert admin(gw.base_url, "GET", "/admin/history").status_code == 400
    answer = admin(gw.base_url, "GET", "/admin/history?pool=fast-chat&minutes=181")
    assert (answer.status_code, answer.json()["error"]["param"]) == (400, "minutes")
    assert admin(gw.base_url, "GET", "/admin/history?pool=nope").status_code == 404
    paths = ok(admin(gw.base_url, "GET", "/admin/openapi.json"))["paths"]
    assert {"/admin/status", "/admin/history"} <= set(paths)


def test_the_page_is_served_with_a_strict_policy_and_relative_urls(
    start_gateway, upstream_a: MockUpstream, upstream_b: MockUpstream
) -> None:
    gw = start_gateway(two_deployments(upstream_a, upstream_b))
    page = httpx.get(gw.base_url + "/admin/")
    assert page.status_code == 200
    assert page.headers["content-type"].startswith("text/html")
    assert {k: page.headers[k] for k in STRICT} == STRICT
    assert 'src="assets/app.js"' in page.text
    assert 'href="assets/style.css"' in page.text
    assert "<script>" not in page.text
    assert "style=" not in page.text
    for name, kind in (("app.js", "text/javascript"), ("style.css", "text/css")):
        asset = httpx.get(f"{gw.base_url}/admin/assets/{name}")
        assert asset.status_code == 200
        assert asset.headers["content-type"].startswith(kind)
        assert asset.headers["content-security-policy"] == CSP
    missing = httpx.get(gw.base_url + "/admin/assets/index.html")
    assert (missing.status_code, missing.json()["error"]["code"]) == (404, "not_found")
    # A relative redirect: behind a stage prefix (/prod/admin) it stays under the prefix.
    moved = httpx.get(gw.base_url + "/admin")
    assert (moved.status_code, moved.headers["location"]) == (308, "admin/")
    # The page itself needs no key and holds no data; the key is only ever typed into it.
    assert ADMIN_KEY not in page.text
