"""Operator circuits: force-open for maintenance makes routing skip a deployment; close restores it."""

from __future__ import annotations

from typing import Any

from edgeproxy_dev.mock_upstream import MockUpstream
from tests.fixtures.clock import FleetClock
from tests.fixtures.table import TableView, wait_for
from tests.integration.admin.helpers import admin, chat, ok, two_deployments

NO_STICKY = {"sticky": {"enabled": False}}


def _served_by(base_url: str) -> str:
    answer = chat(base_url)
    assert answer.status_code == 200, answer.text
    return answer.headers["x-edgeproxy-deployment"]


def _circuit(base_url: str, dep: str) -> dict[str, Any]:
    return ok(admin(base_url, "GET", f"/admin/circuits/{dep}"))


def _open(base_url: str, dep: str, version: int, **body: Any) -> dict[str, Any]:
    answer = admin(
        base_url, "POST", f"/admin/circuits/{dep}/open", json={"version": version, **body}
    )
    return ok(answer)


def _model_requests(upstream: MockUpstream) -> int:
    return len([r for r in upstream.requests() if r["path"].endswith("/chat/completions")])


def test_force_open_skips_the_deployment_until_closed(
    start_gateway, table: TableView, upstream_a: MockUpstream, upstream_b: MockUpstream
) -> None:
    gw = start_gateway(two_deployments(upstream_a, upstream_b, router=NO_STICKY))
    assert _served_by(gw.base_url) == "a"  # the higher priority tier
    before = _circuit(gw.base_url, "a")
    assert (before["state"], before["version"]) == ("closed", 0)

    opened = _open(gw.base_url, "a", 0, reason="swap the GPU node", seconds=3600)

    assert (opened["state"], opened["cause"], opened["reason"]) == (
        "open",
        "maintenance",
        "swap the GPU node",
    )
    assert 3599_000 <= opened["retry_after_ms"] <= 3600_000
    sent_to_a = _model_requests(upstream_a)
    assert [_served_by(gw.base_url) for _ in range(3)] == ["b", "b", "b"]
    assert _model_requests(upstream_a) == sent_to_a  # never asked while in maintenance
    view = ok(admin(gw.base_url, "GET", "/v1/models/fast-chat/deployments"))
    assert {d["id"]: (d["status"], d["cause"]) for d in view["deployments"]}["a"] == (
        "cooldown",
        "maintenance",
    )
    assert table.circuit("a").reason == "swap the GPU node"

    closed = ok(admin(gw.base_url, "POST", "/admin/circuits/a/close", headers={"if-match": '"1"'}))

    assert (closed["state"], closed["cause"], closed["version"]) == ("closed", None, 2)
    assert _served_by(gw.base_url) == "a"
    actions = [e["action"] for e in ok(admin(gw.base_url, "GET", "/admin/audit"))["data"]]
    assert actions[:2] == ["circuit.close", "circuit.force-open"]


def test_every_deployment_in_maintenance_is_503_with_retry_after(
    start_gateway, upstream_a: MockUpstream, upstream_b: MockUpstream
) -> None:
    gw = start_gateway(two_deployments(upstream_a, upstream_b, router=NO_STICKY))
    _open(gw.base_url, "a", 0, reason="r", seconds=120)
    _open(gw.base_url, "b", 0, reason="r", seconds=60)

    answer = chat(gw.base_url)

    assert answer.status_code == 503
    assert answer.json()["error"]["code"] == "model_overloaded"
    assert 59 <= int(answer.headers["retry-after"]) <= 60


def test_a_maintenance_window_ends_with_one_probe_then_routes_again(
    start_gateway, clock: FleetClock, upstream_a: MockUpstream, upstream_b: MockUpstream
) -> None:
    gw = start_gateway(two_deployments(upstream_a, upstream_b, router=NO_STICKY))
    _open(gw.base_url, "a", 0, reason="r", until=clock.now() + 30)
    assert _served_by(gw.base_url) == "b"

    clock.advance(31)

    assert _circuit(gw.base_url, "a")["state"] == "half_open"
    assert _served_by(gw.base_url) == "a"  # the probe
    wait_for(lambda: _circuit(gw.base_url, "a"), lambda c: c["state"] == "closed", "closed")


def test_circuit_writes_are_versioned_validated_and_404_for_unknown_ids(
    start_gateway, upstream_a: MockUpstream, upstream_b: MockUpstream
) -> None:
    gw = start_gateway(two_deployments(upstream_a, upstream_b))
    base = gw.base_url

    assert admin(base, "GET", "/admin/circuits/nope").status_code == 404
    assert admin(base, "POST", "/admin/circuits/nope/close", json={"version": 0}).status_code == 404
    no_version = admin(base, "POST", "/admin/circuits/a/open", json={"reason": "r", "seconds": 5})
    assert no_version.status_code == 428
    stale = admin(
        base, "POST", "/admin/circuits/a/open", json={"reason": "r", "seconds": 5, "version": 4}
    )
    assert stale.status_code == 409
    for body in (
        {"reason": "r"},
        {"reason": "", "seconds": 5},
        {"reason": "r", "seconds": -1},
        {"reason": "r", "until": 1.0},
    ):
        answer = admin(base, "POST", "/admin/circuits/a/open", json={**body, "version": 0})
        assert answer.status_code == 400, (body, answer.text)
    assert _circuit(base, "a")["version"] == 0
    listed = ok(admin(base, "GET", "/admin/circuits"))["circuits"]
    assert [c["deployment"] for c in listed] == ["a", "b"]
