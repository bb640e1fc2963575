"""Organizations and teams through the admin API, on the moto server over real HTTP.

The hierarchy's rules (issue 36, items 1 and 7): unknown or nesting parents,
negative and not-yet-enforced limits, models that do not fit, deleting what
still owns members, stale versions; each a 4xx naming the field, with
nothing written. Moves are counted exactly under concurrency.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import pytest

from edgeproxy_dev.mock_upstream import MockUpstream
from tests.fixtures.configs import config, deployment
from tests.integration.keys.helpers import ADMIN_KEY, ENV, bearer, create_key


@pytest.fixture
def gw(start_gateway: Callable[..., Any], upstream_a: MockUpstream) -> Any:
    cfg = config(
        deployment("a", upstream_a),
        deployment("other", upstream_a, model="other-chat"),
    )
    return start_gateway(cfg, env=ENV)


def call(gw: Any, method: str, path: str, body: Any = None, **headers: str) -> httpx.Response:
    return httpx.request(
        method,
        gw.base_url + path,
        json=body,
        headers={**bearer(ADMIN_KEY), **headers},
        timeout=10,
    )


def error(answer: httpx.Response, status: int) -> dict[str, Any]:
    assert answer.status_code == status, answer.text
    detail: dict[str, Any] = answer.json()["error"]
    return detail


def org_and_team(gw: Any, models: list[str] | None = None) -> None:
    assert (
        call(gw, "POST", "/admin/organizations", {"id": "acme", "name": "Acme"}).status_code == 201
    )
    body: dict[str, Any] = {"id": "search", "name": "Search", "organization_id": "acme"}
    if models is not None:
        body["models"] = models
    answer = call(gw, "POST", "/admin/teams", body)
    assert answer.status_code == 201, answer.text


def test_a_team_belongs_to_an_existing_organization(gw: Any) -> None:
    unknown = call(gw, "POST", "/admin/teams", {"id": "t", "name": "T", "organization_id": "nope"})
    assert error(unknown, 400)["param"] == "organization_id"
    org_and_team(gw)
    nested = call(gw, "POST", "/admin/teams", {"id": "t", "name": "T", "organization_id": "search"})
    detail = error(nested, 400)
    assert detail["param"] == "organization_id"
    assert "do not nest" in detail["message"]
    assert call(gw, "GET", "/admin/teams/t").status_code == 404
    taken = call(
        gw, "POST", "/admin/teams", {"id": "search", "name": "S", "organization_id": "acme"}
    )
    assert error(taken, 409)["param"] == "id"
    org = call(gw, "GET", "/admin/organizations/acme").json()
    assert org["teams"] == 1  # the refused creations counted nothing
    bad_id = call(gw, "POST", "/admin/organizations", {"id": "a#b", "name": "x"})
    assert error(bad_id, 400)["param"] == "id"


@pytest.mark.parametrize("field", ["rpm_limit", "tpm_limit", "max_parallel_requests", "budget_usd"])
def test_limits_are_stored_and_never_negative(gw: Any, field: str) -> None:
    body = {"id": "acme", "name": "Acme", field: -1}
    assert error(call(gw, "POST", "/admin/organizations", body), 400)["param"] == field
    assert call(gw, "GET", "/admin/organizations/acme").status_code == 404
    body[field] = 5
    assert call(gw, "POST", "/admin/organizations", body).status_code == 201
    assert call(gw, "GET", "/admin/organizations/acme").json()[field] == 5
    call(gw, "POST", "/admin/teams", {"id": "search", "name": "S", "organization_id": "acme"})
    patched = call(gw, "PATCH", "/admin/teams/search", {field: 7, "budget_period": "monthly"})
    assert patched.status_code == 200, patched.text
    team = call(gw, "GET", "/admin/teams/search").json()
    assert (team[field], team["budget_period"]) == (7, "monthly")
    assert call(gw, "PATCH", "/admin/teams/search", {field: None}).status_code == 200
    assert call(gw, "GET", "/admin/teams/search").json()[field] is None


@pytest.mark.parametrize("ratio", [0, 1, 1.5, -0.1])
def test_a_soft_threshold_is_a_share_strictly_between_nothing_and_the_budget(
    gw: Any, ratio: float
) -> None:
    body = {"id": "acme", "name": "Acme", "budget_usd": 10, "soft_budget_ratio": ratio}
    assert error(call(gw, "POST", "/admin/organizations", body), 400)["param"] == (
        "soft_budget_ratio"
    )
    assert call(gw, "GET", "/admin/organizations/acme").status_code == 404
    body["soft_budget_ratio"] = 0.9
    assert call(gw, "POST", "/admin/organizations", body).status_code == 201


def test_end_user_limits_are_a_teams_only(gw: Any) -> None:
    org_and_team(gw)
    limits = {"rpm_limit": 3, "budget_usd": 0.5, "budget_period": "daily"}
    patched = call(gw, "PATCH", "/admin/teams/search", {"end_user_limits": limits})
    assert patched.status_code == 200, patched.text
    shown = call(gw, "GET", "/admin/teams/search").json()["end_user_limits"]
    assert shown == {**limits, "tpm_limit": None, "max_parallel_requests": None}
    on_org = call(gw, "PATCH", "/admin/organizations/acme", {"end_user_limits": limits})
    assert error(on_org, 400)["param"] == "end_user_limits"
    negative = call(gw, "PATCH", "/admin/teams/search", {"end_user_limits": {"tpm_limit": -1}})
    assert error(negative, 400)["param"].startswith("end_user_limits")
    assert call(gw, "PATCH", "/admin/teams/search", {"end_user_limits": None}).status_code == 200
    assert call(gw, "GET", "/admin/teams/search").json()["end_user_limits"] is None


def test_a_key_joins_only_a_team_that_allows_its_models(gw: Any) -> None:
    org_and_team(gw, models=["fast-chat"])
    every = create_key(gw.base_url)  # no model list: every model
    other = create_key(gw.base_url, models=["other-chat"])
    fits = create_key(gw.base_url, models=["fast-chat"])
    for key in (every, other):
        detail = error(call(gw, "PUT", f"/admin/keys/{key['id']}/team", {"team_id": "search"}), 400)
        assert detail["param"] == "team_id"
        assert detail["code"] == "models_not_allowed"
    unknown = call(gw, "PUT", f"/admin/keys/{fits['id']}/team", {"team_id": "ghost"})
    assert error(unknown, 400)["param"] == "team_id"
    moved = call(gw, "PUT", f"/admin/keys/{fits['id']}/team", {"team_id": "search"})
    assert moved.status_code == 200, moved.text
    assert call(gw, "GET", "/admin/teams/search").json()["keys"] == 1
    # The team cannot narrow its models below what its key uses.
    version = call(gw, "GET", "/admin/teams/search").headers["etag"]
    narrowed = call(
        gw, "PATCH", "/admin/teams/search", {"models": ["other-chat"]}, **{"if-match": version}
    )
    assert error(narrowed, 400)["param"] == "models"
    effective = call(gw, "GET", f"/admin/keys/{fits['id']}/effective").json()
    assert effective["team_id"] == "search"
    assert effective["organization_id"] == "acme"
    assert effective["models"] == {"value": ["fast-chat"], "levels": ["key", "team"]}
    assert effective["limits"]["rpm_limit"] == {"value": None, "level": None}


def test_delete_refuses_what_still_owns_members_and_writes_nothing(gw: Any) -> None:
    org_and_team(gw)
    key = create_key(gw.base_url, models=["fast-chat"], rpm_limit=7)
    assert (
        call(gw, "PUT", f"/admin/keys/{key['id']}/team", {"team_id": "search"}).status_code == 200
    )
    detail = error(call(gw, "DELETE", "/admin/teams/search"), 400)
    assert detail["param"] == "id"
    assert detail["code"] == "not_empty"
    assert error(call(gw, "DELETE", "/admin/organizations/acme"), 400)["code"] == "not_empty"
    limits = call(gw, "GET", f"/admin/keys/{key['id']}/effective").json()["limits"]
    assert limits["rpm_limit"] == {"value": 7, "level": "key"}
    assert call(gw, "PUT", f"/admin/keys/{key['id']}/team", {"team_id": None}).status_code == 200
    stale = call(gw, "DELETE", "/admin/teams/search", **{"if-match": '"9"'})
    assert error(stale, 409)["param"] == "version"
    assert call(gw, "GET", "/admin/teams/search").status_code == 200
    assert call(gw, "DELETE", "/admin/teams/search").status_code == 200
    assert call(gw, "DELETE", "/admin/organizations/acme").status_code == 200
    actions = [e["action"] for e in call(gw, "GET", "/admin/audit").json()["data"]]
    for action in ("organization.create", "team.create", "key.move", "team.delete"):
        assert action in actions


def test_concurrent_moves_are_each_counted_once(gw: Any) -> None:
    org_and_team(gw)
    made = [create_key(gw.base_url, models=["fast-chat"]) for _ in range(12)]

    def move(key: dict[str, Any]) -> int:
        return call(gw, "PUT", f"/admin/keys/{key['id']}/team", {"team_id": "search"}).status_code

    with ThreadPoolExecutor(6) as pool:
        assert set(pool.map(move, made)) == {200}
    assert call(gw, "GET", "/admin/teams/search").json()["keys"] == 12
    with ThreadPoolExecutor(6) as pool:
        list(
            pool.map(
                lambda k: call(gw, "PUT", f"/admin/keys/{k['id']}/team", {"team_id": None}), made
            )
        )
    assert call(gw, "GET", "/admin/teams/search").json()["keys"] == 0


def test_a_team_key_cannot_widen_its_models_past_the_team(gw: Any) -> None:
    org_and_team(gw, models=["fast-chat"])
    key = create_key(gw.base_url, models=["fast-chat"])
    assert (
        call(gw, "PUT", f"/admin/keys/{key['id']}/team", {"team_id": "search"}).status_code == 200
    )
    widened = call(gw, "PATCH", f"/admin/keys/{key['id']}", {"models": ["fast-chat", "other-chat"]})
    assert error(widened, 400)["param"] == "models"
    assert call(gw, "GET", f"/admin/keys/{key['id']}").json()["models"] == ["fast-chat"]
    limited = call(
        gw, "PATCH", f"/admin/keys/{key['id']}", {"models": ["fast-chat"], "rpm_limit": 3}
    )
    assert limited.status_code == 200, limited.text
    # The team saw the change: an update checked against the key's old models would now fail.
    everything = call(gw, "PATCH", f"/admin/keys/{key['id']}", {"models": None})
    assert error(everything, 400)["param"] == "models"


def test_a_delete_racing_moves_never_orphans_a_key(gw: Any) -> None:
    org_and_team(gw)
    made = [create_key(gw.base_url, models=["fast-chat"]) for _ in range(8)]

    def move(key: dict[str, Any]) -> int:
        return call(gw, "PUT", f"/admin/keys/{key['id']}/team", {"team_id": "search"}).status_code

    def delete(_: int) -> int:
        return call(gw, "DELETE", "/admin/teams/search").status_code

    with ThreadPoolExecutor(8) as pool:
        moves = [pool.submit(move, k) for k in made]
        deletes = [pool.submit(delete, i) for i in range(4)]
        statuses = [f.result() for f in moves + deletes]
    assert set(statuses) <= {200, 400, 409}
    members = [
        k["id"] for k in call(gw, "GET", "/admin/keys").json()["data"] if k["team_id"] == "search"
    ]
    team = call(gw, "GET", "/admin/teams/search")
    if team.status_code == 404:
        assert members == []  # deleted: no key still names it
    else:
        assert team.json()["keys"] == len(members)


def test_a_key_created_into_an_unknown_team_or_an_organization_given_a_parent_is_refused(
    gw: Any,
) -> None:
    org_and_team(gw)
    keys_before = call(gw, "GET", "/admin/keys").json()["data"]
    ghost = call(gw, "POST", "/admin/keys", {"name": "k", "team_id": "ghost"})
    detail = error(ghost, 400)
    assert detail["param"] == "team_id"
    assert "ghost" in detail["message"]
    assert call(gw, "GET", "/admin/keys").json()["data"] == keys_before  # no key written
    # An organization has no parent: naming one (a way to a cycle) is refused by its field.
    parent = call(
        gw, "POST", "/admin/organizations", {"id": "sub", "name": "S", "organization_id": "acme"}
    )
    assert error(parent, 400)["param"] == "organization_id"
    assert call(gw, "GET", "/admin/organizations/sub").status_code == 404
    acme = call(gw, "GET", "/admin/organizations/acme").json()
    patched = call(gw, "PATCH", "/admin/organizations/acme", {"organization_id": "acme"})
    assert error(patched, 400)["param"] == "organization_id"
    assert call(gw, "GET", "/admin/organizations/acme").json() == acme
