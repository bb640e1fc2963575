"""Scoped admins: a team admin's authorization matrix over every admin route.

The routes are enumerated from the app's registry (``admin_routes``), so a new
route is in the matrix the day it is added. A team admin of team A, against
objects of team B (same organization), of its organization and of the gateway:
every route is 403 and nothing changes. On its own team the allowed set works,
and it cannot mint or shape a key with more rights than its own.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from edgeproxy.api.admin.routes import admin_routes
from edgeproxy_dev.mock_upstream import MockUpstream
from tests.fixtures.configs import config, deployment
from tests.fixtures.secrets import remember
from tests.integration.keys.helpers import ADMIN_KEY, ENV, bearer, create_key


@pytest.fixture
def world(start_gateway: Callable[..., Any], upstream_a: MockUpstream) -> dict[str, Any]:
    gw = start_gateway(
        config(deployment("a", upstream_a), deployment("o", upstream_a, model="other-chat")),
        env=ENV,
    )
    root = {"authorization": f"Bearer {ADMIN_KEY}"}

    def made(path: str, body: dict[str, Any]) -> dict[str, Any]:
        answer = httpx.post(gw.base_url + path, json=body, headers=root, timeout=10)
        assert answer.status_code == 201, answer.text
        return dict(answer.json())

    made("/admin/organizations", {"id": "acme", "name": "Acme"})
    for team in ("a", "b"):
        made("/admin/teams", {"id": team, "name": team, "organization_id": "acme"})
    admin_a = made(
        "/admin/keys",
        {
            "name": "lead-a",
            "role": "pro",
            "models": ["fast-chat"],
            "rpm_limit": 100,
            "team_id": "a",
            "admin_of": "team:a",
        },
    )
    viewer_a = made(
        "/admin/keys",
        {"name": "view-a", "team_id": "a", "admin_of": "team:a", "admin_read_only": True,
         "models": ["fast-chat"]},
    )  # fmt: skip
    remember(admin_a["key"])
    remember(viewer_a["key"])
    return {
        "gw": gw,
        "admin_a": admin_a["key"],
        "viewer_a": viewer_a["key"],
        "ka": create_key(gw.base_url, team_id="a", models=["fast-chat"])["id"],
        "kb": create_key(gw.base_url, team_id="b", models=["fast-chat"])["id"],
        "kg": create_key(gw.base_url)["id"],
    }


def _path(template: str, values: dict[str, str]) -> str:
    return re.sub(r"{(\w+)(?::\w+)?}", lambda m: values.get(m.group(1), "fast-chat"), template)


TARGETS = {
    "team B": {"key_id": "kb", "team_id": "b", "org_id": "acme"},
    "its organization": {"key_id": "kg", "team_id": "b", "org_id": "acme"},
    "the gateway": {"key_id": "kg", "team_id": "nope", "org_id": "nope", "id": "a",
                    "deployment": "a", "reason": "general", "alias": "x"},
}  # fmt: skip
LISTINGS = {"/admin/keys", "/admin/teams", "/admin/organizations"}
# Answered to a team admin, held to its team's label (``test_team_usage.py`` sends traffic).
REPORTS = {"/admin/usage": "rows", "/admin/usage/requests": "data"}
BODIES = [
    {"name": "x", "team_id": "b", "models": ["fast-chat"]},
    {"name": "x"},
    {"id": "z", "name": "z", "organization_id": "acme"},
]


def _values(world: dict[str, Any], names: dict[str, str]) -> dict[str, str]:
    return {k: world.get(v, v) for k, v in names.items()}


def test_a_team_admin_is_refused_every_route_outside_its_team(world: dict[str, Any]) -> None:
    gw, allowed = world["gw"], []
    headers = bearer(world["admin_a"])
    routes = admin_routes()
    assert len(routes) > 50
    # The recent routes are in the registry walked here: alerts, usage and the log, team
    # moves, the explainer, organizations.
    named = {f"{r.method} {r.path}" for r in routes}
    assert {
        "GET /admin/alerts/undelivered",
        "GET /admin/usage",
        "GET /admin/usage/requests",
        "PUT /admin/teams/{team_id}/organization",
        "PUT /admin/keys/{key_id}/team",
        "POST /admin/route/explain",
        "DELETE /admin/organizations/{org_id}",
    } <= named
    # Beside the registry: the deep health check (it reads every credential reference).
    deep = httpx.get(gw.base_url + "/health/deep", headers=headers, timeout=10)
    assert deep.status_code == 403, deep.text
    for route in routes:
        for target, names in TARGETS.items():
            path = _path(route.path, _values(world, names))
            for body in BODIES if route.method in ("POST", "PUT", "PATCH") else [None]:
                answer = httpx.request(
                    route.method, gw.base_url + path, json=body, headers=headers, timeout=10
                )
                if answer.status_code == 403:
                    continue
                if route.method == "GET" and route.path in LISTINGS and answer.status_code == 200:
                    # A listing answers, filtered: nothing outside team A in it.
                    shown = {row["id"] for row in answer.json()["data"]}
                    outside = shown & {world["kb"], world["kg"], "b", "acme"}
                    if not outside:
                        continue
                if route.method == "GET" and route.path in REPORTS and answer.status_code == 200:
                    rows = answer.json()[REPORTS[route.path]]
                    if all(row["team"] == "a" for row in rows):
                        continue
                allowed.append(f"{route.method} {path} ({target}): {answer.status_code}")
    assert allowed == []
    root = bearer(ADMIN_KEY)
    kb = httpx.get(f"{gw.base_url}/admin/keys/{world['kb']}", headers=root, timeout=10).json()
    assert kb["status"] == "active"  # nothing it tried changed anything
    assert kb["version"] == 0
    team_b = httpx.get(gw.base_url + "/admin/teams/b", headers=root, timeout=10).json()
    assert team_b["keys"] == 1


def test_on_its_own_team_the_allowed_set_works(world: dict[str, Any]) -> None:
    gw = world["gw"]
    headers, ka = bearer(world["admin_a"]), world["ka"]

    def do(method: str, path: str, body: Any = None) -> httpx.Response:
        return httpx.request(method, gw.base_url + path, json=body, headers=headers, timeout=10)

    listed = {k["id"] for k in do("GET", "/admin/keys").json()["data"]}
    assert world["kb"] not in listed
    assert world["kg"] not in listed
    assert ka in listed
    assert [t["id"] for t in do("GET", "/admin/teams").json()["data"]] == ["a"]
    assert do("GET", f"/admin/keys/{ka}").status_code == 200
    assert do("GET", f"/admin/keys/{ka}/effective").json()["team_id"] == "a"
    assert do("PATCH", f"/admin/keys/{ka}", {"rpm_limit": 50}).status_code == 200
    assert do("POST", f"/admin/keys/{ka}/rotate", {}).status_code == 200
    assert do("GET", "/admin/teams/a").status_code == 200
    assert do("PATCH", "/admin/teams/a", {"name": "Team A"}).status_code == 200
    minted = do(
        "POST", "/admin/keys",
        {"name": "new", "team_id": "a", "models": ["fast-chat"], "rpm_limit": 10},
    )  # fmt: skip
    assert minted.status_code == 201, minted.text
    remember(minted.json()["key"])
    assert do("POST", f"/admin/keys/{ka}/revoke").status_code == 200


@pytest.mark.parametrize(
    ("extra", "field"),
    [
        ({"role": "internal"}, "role"),
        ({"models": None}, "models"),
        ({"rpm_limit": 500}, "rpm_limit"),
        ({"rpm_limit": None}, "rpm_limit"),
        ({"admin_of": "organization:acme"}, "admin_of"),
    ],
)
def test_a_team_admin_cannot_mint_more_rights_than_its_own(
    world: dict[str, Any], extra: dict[str, Any], field: str
) -> None:
    gw = world["gw"]
    body = {"name": "new", "team_id": "a", "models": ["fast-chat"], "rpm_limit": 10, **extra}
    body = {k: v for k, v in body.items() if v is not None}
    answer = httpx.post(
        gw.base_url + "/admin/keys", json=body, headers=bearer(world["admin_a"]), timeout=10
    )
    assert answer.status_code == 403, answer.text
    assert answer.json()["error"]["param"] == field
    patched = httpx.patch(
        f"{gw.base_url}/admin/keys/{world['ka']}",
        json={"rpm_limit": 500},
        headers=bearer(world["admin_a"]),
        timeout=10,
    )
    assert patched.status_code == 403


def test_a_viewer_reads_its_team_and_changes_nothing(world: dict[str, Any]) -> None:
    gw, headers, ka = world["gw"], bearer(world["viewer_a"]), world["ka"]
    assert (
        httpx.get(f"{gw.base_url}/admin/keys/{ka}", headers=headers, timeout=10).status_code == 200
    )
    for method, path, body in (
        ("PATCH", f"/admin/keys/{ka}", {"rpm_limit": 1}),
        ("POST", f"/admin/keys/{ka}/revoke", None),
        ("PATCH", "/admin/teams/a", {"name": "x"}),
        ("POST", "/admin/keys", {"name": "x", "team_id": "a", "models": ["fast-chat"]}),
    ):
        answer = httpx.request(method, gw.base_url + path, json=body, headers=headers, timeout=10)
        assert answer.status_code == 403, (method, path)


def test_an_organization_admin_manages_its_teams_only(world: dict[str, Any]) -> None:
    gw = world["gw"]
    root = bearer(ADMIN_KEY)
    for body in ({"id": "other", "name": "Other"},):
        assert (
            httpx.post(gw.base_url + "/admin/organizations", json=body, headers=root).status_code
            == 201
        )
    outside = {"id": "c", "name": "c", "organization_id": "other"}
    assert httpx.post(gw.base_url + "/admin/teams", json=outside, headers=root).status_code == 201
    lead = httpx.post(
        gw.base_url + "/admin/keys",
        json={"name": "org-lead", "admin_of": "organization:acme"},
        headers=root,
        timeout=10,
    )
    assert lead.status_code == 201, lead.text
    headers = bearer(remember(lead.json()["key"]))

    def do(method: str, path: str, body: Any = None) -> httpx.Response:
        return httpx.request(method, gw.base_url + path, json=body, headers=headers, timeout=10)

    made = do("POST", "/admin/teams", {"id": "d", "name": "d", "organization_id": "acme"})
    assert made.status_code == 201, made.text
    refused = do("POST", "/admin/teams", {"id": "e", "name": "e", "organization_id": "other"})
    assert refused.status_code == 403
    assert [t["id"] for t in do("GET", "/admin/teams").json()["data"]] == ["a", "b", "d"]
    assert [o["id"] for o in do("GET", "/admin/organizations").json()["data"]] == ["acme"]
    assert do("GET", f"/admin/keys/{world['kb']}").status_code == 200  # team b is in acme
    assert do("GET", "/admin/teams/c").status_code == 403
    assert do("PATCH", "/admin/organizations/acme", {"name": "x"}).status_code == 403
    assert do("DELETE", "/admin/teams/d").status_code == 200
    assert do("GET", "/admin/deployments").status_code == 403


def test_a_gateway_viewer_reads_everything_and_writes_nothing(world: dict[str, Any]) -> None:
    gw = world["gw"]
    made = httpx.post(
        gw.base_url + "/admin/keys",
        json={"name": "auditor", "admin_of": "gateway", "admin_read_only": True},
        headers=bearer(ADMIN_KEY),
        timeout=10,
    )
    assert made.status_code == 201, made.text
    headers = bearer(remember(made.json()["key"]))
    for path in ("/admin/deployments", "/admin/keys", "/admin/teams", "/admin/audit"):
        assert httpx.get(gw.base_url + path, headers=headers, timeout=10).status_code == 200
    write = httpx.post(gw.base_url + "/admin/keys", json={"name": "x"}, headers=headers, timeout=10)
    assert write.status_code == 403
    no_viewer = httpx.post(
        gw.base_url + "/admin/keys",
        json={"name": "y", "admin_of": "gateway"},
        headers=bearer(ADMIN_KEY),
        timeout=10,
    )
    assert no_viewer.status_code == 400
    assert no_viewer.json()["error"]["param"] == "admin_of"


def test_a_deleted_teams_id_is_never_reused_so_its_admin_keys_cover_nothing_new(
    world: dict[str, Any],
) -> None:
    gw = world["gw"]
    root = bearer(ADMIN_KEY)

    def do(method: str, path: str, body: Any = None, **headers: str) -> httpx.Response:
        return httpx.request(
            method, gw.base_url + path, json=body, headers={**root, **headers}, timeout=10
        )

    # Team b's admin key outlives the team (nothing ties a scope to its team's life).
    lead_b = do(
        "POST", "/admin/keys", {"name": "lead-b", "team_id": "b", "admin_of": "team:b",
                                "models": ["fast-chat"]},
    )  # fmt: skip
    assert lead_b.status_code == 201, lead_b.text
    lead_b_headers = bearer(remember(lead_b.json()["key"]))
    for key_id in (world["kb"], lead_b.json()["id"]):
        assert do("PUT", f"/admin/keys/{key_id}/team", {"team_id": None}).status_code == 200
    assert do("DELETE", "/admin/teams/b").status_code == 200
    assert do("GET", "/admin/teams/b").status_code == 404
    assert "b" not in [t["id"] for t in do("GET", "/admin/teams").json()["data"]]

    again = do("POST", "/admin/teams", {"id": "b", "name": "b2", "organization_id": "acme"})
    assert again.status_code == 409, again.text
    assert again.json()["error"]["param"] == "id"
    assert "never reused" in again.json()["error"]["message"]
    # Nothing can join the deleted team either.
    moved = do("PUT", f"/admin/keys/{world['kb']}/team", {"team_id": "b"})
    assert moved.status_code in (400, 404), moved.text
    # The old scope reaches nothing: no team b to read, no key to mint into it.
    scoped = httpx.get(gw.base_url + "/admin/teams/b", headers=lead_b_headers, timeout=10)
    assert scoped.status_code in (403, 404)
    minted = httpx.post(
        gw.base_url + "/admin/keys",
        json={"name": "x", "team_id": "b", "models": ["fast-chat"]},
        headers=lead_b_headers,
        timeout=10,
    )
    assert minted.status_code in (400, 403, 404), minted.text


@pytest.mark.parametrize(
    "change",
    [
        {"rpm_limit": 1000},
        {"tpm_limit": 10**6},
        {"max_parallel_requests": 50},
        {"budget_usd": 1e6},
        {"name": "renamed", "budget_usd": 1e6},  # a limit beside an allowed field
    ],
)
def test_a_team_admin_cannot_change_its_own_teams_limits(
    world: dict[str, Any], change: dict[str, Any]
) -> None:
    gw = world["gw"]
    before = httpx.get(
        gw.base_url + "/admin/teams/a", headers={"authorization": f"Bearer {ADMIN_KEY}"}, timeout=10
    ).json()
    answer = httpx.patch(
        gw.base_url + "/admin/teams/a", json=change, headers=bearer(world["admin_a"]), timeout=10
    )
    assert answer.status_code == 403, answer.text
    limit = next(name for name in change if name != "name")
    assert answer.json()["error"]["param"] == limit
    after = httpx.get(
        gw.base_url + "/admin/teams/a", headers={"authorization": f"Bearer {ADMIN_KEY}"}, timeout=10
    ).json()
    assert after == before  # nothing half-written, the name included
    # The organization's (here: the gateway's) admin grants it.
    granted = httpx.patch(
        gw.base_url + "/admin/teams/a",
        json=change,
        headers={"authorization": f"Bearer {ADMIN_KEY}"},
        timeout=10,
    )
    assert granted.status_code == 200, granted.text
