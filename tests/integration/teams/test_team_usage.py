"""Reports and the request log by level: records carry the key's team and organization,
``/admin/usage`` groups by them, and a scoped admin sees only its own team (organization).

Requests go through a real gateway process to a loopback upstream; the scoped
admins are keys with ``admin_of`` as the authorization matrix's fixtures make them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import httpx
import pytest

from edgeproxy_dev.mock_upstream import MockUpstream
from tests.fixtures.clock import FleetClock
from tests.fixtures.table import wait_for
from tests.integration.keys.helpers import ADMIN_KEY, ENV, bearer, create_key
from tests.integration.usage.helpers import chat, gateway_config, priced, records

ROOT = bearer(ADMIN_KEY)


@pytest.fixture
def fleet(start_gateway: Callable[..., Any], upstream_a: MockUpstream) -> dict[str, Any]:
    gw = start_gateway(gateway_config(priced("a", upstream_a)), env=ENV)
    for path, body in (
        ("/admin/organizations", {"id": "acme", "name": "Acme"}),
        ("/admin/organizations", {"id": "globex", "name": "Globex"}),
        ("/admin/teams", {"id": "search", "name": "Search", "organization_id": "acme"}),
        ("/admin/teams", {"id": "ads", "name": "Ads", "organization_id": "acme"}),
        ("/admin/teams", {"id": "web", "name": "Web", "organization_id": "globex"}),
    ):
        made = httpx.post(gw.base_url + path, json=body, headers=ROOT, timeout=10)
        assert made.status_code == 201, made.text
    keys = {
        team: create_key(gw.base_url, name=f"app-{team}", team_id=team, models=["fast-chat"])
        for team in ("search", "ads", "web")
    }
    keys["none"] = create_key(gw.base_url, name="app-none")
    admins = {
        "team": create_key(
            gw.base_url, name="lead", team_id="search", admin_of="team:search",
            models=["fast-chat"],
        ),
        "viewer": create_key(
            gw.base_url, name="viewer", team_id="search", admin_of="team:search",
            admin_read_only=True, models=["fast-chat"],
        ),
        "org": create_key(gw.base_url, name="org-lead", admin_of="organization:acme"),
    }  # fmt: skip
    return {"gw": gw, "keys": keys, "admins": admins}


def _send(fleet: dict[str, Any], counts: dict[str, int]) -> int:
    base = fleet["gw"].base_url
    for team, n in counts.items():
        for _ in range(n):
            assert chat(base, fleet["keys"][team]["key"]).status_code == 200
    return sum(counts.values())


def _report(base_url: str, key: str, requests: int | None, **params: str) -> dict[str, Any]:
    def read() -> dict[str, Any]:
        answer = httpx.get(
            base_url + "/admin/usage", params=params, headers=bearer(key), timeout=30
        )
        assert answer.status_code == 200, answer.text
        body: dict[str, Any] = answer.json()
        return body

    if requests is None:
        return read()
    return wait_for(read, lambda r: r["totals"]["requests"] >= requests, "the report")


def _log(base_url: str, key: str, at: float) -> list[dict[str, Any]]:
    answer = httpx.get(
        base_url + "/admin/usage/requests",
        params={"at": str(at), "limit": "1000"},
        headers=bearer(key),
        timeout=30,
    )
    assert answer.status_code == 200, answer.text
    data: list[dict[str, Any]] = answer.json()["data"]
    return data


def test_records_carry_the_team_and_organization_and_reports_group_by_them(
    fleet: dict[str, Any], clock: FleetClock
) -> None:
    base, started = fleet["gw"].base_url, clock.now()
    total = _send(fleet, {"search": 2, "ads": 1, "web": 3, "none": 1})
    found = records(base, started, total)
    labels = sorted((r["key_name"], r["team"], r["organization"]) for r in found)
    assert labels == sorted(
        [("app-search", "search", "acme")] * 2
        + [("app-ads", "ads", "acme"), ("app-none", None, None)]
        + [("app-web", "web", "globex")] * 3
    )
    by_team = _report(base, ADMIN_KEY, total, group_by="organization,team")
    rows = [(r["organization"], r["team"], r["requests"]) for r in by_team["rows"]]
    assert rows == [
        (None, None, 1),
        ("acme", "ads", 1),
        ("acme", "search", 2),
        ("globex", "web", 3),
    ]
    assert by_team["group_by"] == ["team", "organization"]
    costs = {r["team"]: r["cost_usd"] for r in by_team["rows"]}
    assert costs["web"] == pytest.approx(3 * costs["ads"])  # one request's cost, three times
    by_org = _report(base, ADMIN_KEY, total, group_by="organization")
    assert [(r["organization"], r["requests"]) for r in by_org["rows"]] == [
        (None, 1),
        ("acme", 3),
        ("globex", 3),
    ]
    csv = httpx.get(
        base + "/admin/usage",
        params={"group_by": "team", "format": "csv"},
        headers=ROOT,
        timeout=30,
    ).text
    assert csv.splitlines()[0].split(",")[5:7] == ["team", "organization"]
    assert {line.split(",")[5] for line in csv.splitlines()[1:]} == {"", "ads", "search", "web"}


def test_a_team_admin_sees_only_its_teams_report_and_log(
    fleet: dict[str, Any], clock: FleetClock
) -> None:
    base, started = fleet["gw"].base_url, clock.now()
    total = _send(fleet, {"search": 2, "ads": 1, "web": 1, "none": 1})
    records(base, started, total)  # everything is written
    _report(base, ADMIN_KEY, total)
    for who in ("team", "viewer"):
        key = fleet["admins"][who]["key"]
        mine = _report(base, key, None, group_by="key,team,organization")
        assert [(r["key_name"], r["team"], r["requests"]) for r in mine["rows"]] == [
            ("app-search", "search", 2)
        ]
        assert mine["totals"]["requests"] == 2  # the totals are its team's too
        log = _log(base, key, started)
        assert len(log) == 2
        assert {(r["team"], r["key_id"]) for r in log} == {
            ("search", fleet["keys"]["search"]["id"])
        }
    org = fleet["admins"]["org"]["key"]
    acme = _report(base, org, None, group_by="team")
    assert [(r["team"], r["requests"]) for r in acme["rows"]] == [("ads", 1), ("search", 2)]
    assert {r["team"] for r in _log(base, org, started)} == {"ads", "search"}
    everything = _report(base, ADMIN_KEY, None, group_by="team")
    assert everything["totals"]["requests"] == total


def test_a_key_moved_to_another_team_keeps_its_past_under_the_old_one(
    fleet: dict[str, Any], clock: FleetClock
) -> None:
    base, started = fleet["gw"].base_url, clock.now()
    key = fleet["keys"]["ads"]
    _send(fleet, {"ads": 1})
    records(base, started, 1)
    moved = httpx.put(
        f"{base}/admin/keys/{key['id']}/team", json={"team_id": "search"}, headers=ROOT
    )
    assert moved.status_code == 200, moved.text
    # This process forgets the moved key at once (another process within the key cache TTL).
    _send(fleet, {"ads": 1})
    found = records(base, started, 2)
    assert sorted(r["team"] for r in found) == ["ads", "search"]
    lead = fleet["admins"]["team"]["key"]
    rows = _report(base, lead, None, group_by="team")["rows"]
    assert [(r["team"], r["requests"]) for r in rows] == [("search", 1)]


def test_the_log_filters_by_end_user_within_a_team_admins_view(
    fleet: dict[str, Any], clock: FleetClock
) -> None:
    """Reports do not group by end user (one row per customer would not bound the aggregates);
    the log answers "what did this end user send", held to the admin's scope."""
    base, started = fleet["gw"].base_url, clock.now()
    for team, user in (("search", "alice"), ("search", "alice"), ("search", "bob")):
        assert chat(base, fleet["keys"][team]["key"], user=user).status_code == 200
    assert chat(base, fleet["keys"]["ads"]["key"], user="alice").status_code == 200  # another
    records(base, started, 4)

    def log(key: str, **params: str) -> httpx.Response:
        return httpx.get(
            base + "/admin/usage/requests",
            params={"at": str(started), **params},
            headers=bearer(key),
            timeout=30,
        )

    everyone = log(ADMIN_KEY, end_user="alice").json()["data"]
    assert sorted(r["team"] for r in everyone) == ["ads", "search", "search"]
    lead = fleet["admins"]["team"]["key"]
    mine = log(lead, end_user="alice").json()["data"]
    assert [(r["team"], r["end_user"]) for r in mine] == [("search", "alice")] * 2
    assert [r["end_user"] for r in log(lead, end_user="bob").json()["data"]] == ["bob"]
    bad = log(ADMIN_KEY, end_user="a\nb")
    assert bad.status_code == 400
    assert bad.json()["error"]["param"] == "end_user"
    grouped = httpx.get(
        base + "/admin/usage", params={"group_by": "end_user"}, headers=ROOT, timeout=30
    )
    assert grouped.status_code == 400
    assert grouped.json()["error"]["param"] == "group_by"
