"""Moving a team to another organization: the admin API, the CLI, and its bad input.

On the moto server over real HTTP. The rule: the team's models must be allowed
by the new organization (else a 400 naming ``organization_id``); an unknown
organization, a team's id in its place, a stale version or a missing team are
4xx too, and a refused move writes nothing (the team, both organizations'
team counts and the audit log are as before).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import pytest

from edgeproxy.cli import main
from edgeproxy_dev.mock_upstream import MockUpstream
from tests.fixtures.configs import config, deployment
from tests.integration.keys.helpers import ADMIN_KEY, ENV, bearer, create_key


@pytest.fixture
def gw(start_gateway: Callable[..., Any], upstream_a: MockUpstream) -> Any:
    cfg = config(deployment("a", upstream_a), deployment("o", upstream_a, model="other-chat"))
    gw = start_gateway(cfg, env=ENV)
    for path, body in (
        ("/admin/organizations", {"id": "acme", "name": "Acme"}),
        ("/admin/organizations", {"id": "globex", "name": "Globex", "models": ["fast-chat"]}),
        ("/admin/organizations", {"id": "initech", "name": "Initech", "models": ["other-chat"]}),
        ("/admin/teams", {"id": "search", "name": "S", "organization_id": "acme",
                          "models": ["fast-chat"]}),
        ("/admin/teams", {"id": "open", "name": "O", "organization_id": "acme"}),
    ):  # fmt: skip
        assert call(gw, "POST", path, body).status_code == 201
    return gw


def call(gw: Any, method: str, path: str, body: Any = None, **headers: str) -> httpx.Response:
    return httpx.request(
        method, gw.base_url + path, json=body, headers={**bearer(ADMIN_KEY), **headers}, timeout=10
    )


def move(gw: Any, team: str, org: Any, **headers: str) -> httpx.Response:
    return call(gw, "PUT", f"/admin/teams/{team}/organization", {"organization_id": org}, **headers)


def state(gw: Any) -> dict[str, Any]:
    """What a refused move must leave as it was."""
    teams = {t["id"]: t for t in call(gw, "GET", "/admin/teams").json()["data"]}
    orgs = {o["id"]: o["teams"] for o in call(gw, "GET", "/admin/organizations").json()["data"]}
    audit = call(gw, "GET", "/admin/audit").json()["data"]
    return {"teams": teams, "orgs": orgs, "audit": len(audit)}


def test_a_team_moves_to_an_organization_that_allows_its_models(gw: Any) -> None:
    key = create_key(gw.base_url, team_id="search", models=["fast-chat"])
    before = call(gw, "GET", "/admin/teams/search")
    moved = move(gw, "search", "globex", **{"if-match": before.headers["etag"]})
    assert moved.status_code == 200, moved.text
    assert moved.json()["organization_id"] == "globex"
    assert moved.json()["version"] == before.json()["version"] + 1
    assert moved.headers["etag"] == f'"{moved.json()["version"]}"'
    orgs = {o["id"]: o["teams"] for o in call(gw, "GET", "/admin/organizations").json()["data"]}
    assert orgs == {"acme": 1, "globex": 1, "initech": 0}  # counted out of one, into the other
    assert call(gw, "GET", "/admin/teams/search").json()["keys"] == 1  # its keys came along
    effective = call(gw, "GET", f"/admin/keys/{key['id']}/effective").json()
    assert effective["organization_id"] == "globex"
    assert effective["models"]["levels"] == ["key", "team", "organization"]
    [entry] = [
        e for e in call(gw, "GET", "/admin/audit").json()["data"] if e["action"] == "team.move"
    ]
    assert entry["target"] == "team:search"
    assert entry["changes"] == [{"path": "organization_id", "old": "acme", "new": "globex"}]
    again = move(gw, "search", "globex")  # already there: nothing to do
    assert again.status_code == 200
    assert again.json()["version"] == moved.json()["version"]
    # A team allowed every model joins only an organization without a list.
    assert move(gw, "open", "initech").status_code == 400
    assert call(gw, "POST", "/admin/organizations", {"id": "free", "name": "F"}).status_code == 201
    assert move(gw, "open", "free").json()["organization_id"] == "free"
    assert call(gw, "DELETE", "/admin/organizations/acme").status_code == 200  # empty now


@pytest.mark.parametrize(
    ("team", "org", "status", "param", "code"),
    [
        ("search", "initech", 400, "organization_id", "models_not_allowed"),  # fast-chat
        ("open", "globex", 400, "organization_id", "models_not_allowed"),  # every model
        ("search", "nope", 400, "organization_id", "unknown_organization"),
        ("search", "open", 400, "organization_id", "unknown_organization"),  # a team: no nesting
        ("search", "A#b", 400, "organization_id", None),  # not an id
        ("search", None, 400, None, None),  # a body without one
        ("ghost", "globex", 404, "id", None),
    ],
)
def test_a_refused_move_names_the_field_and_writes_nothing(
    gw: Any, team: str, org: Any, status: int, param: str | None, code: str | None
) -> None:
    before = state(gw)
    answer = move(gw, team, org)
    assert answer.status_code == status, answer.text
    error = answer.json()["error"]
    if param is not None:
        assert error["param"] == param
    if code is not None:
        assert error["code"] == code
    if code == "models_not_allowed":
        assert "models" in error["message"]
    assert state(gw) == before


def test_a_stale_version_is_409_and_writes_nothing(gw: Any) -> None:
    before = state(gw)
    stale = move(gw, "search", "globex", **{"if-match": '"7"'})
    assert stale.status_code == 409, stale.text
    assert stale.json()["error"]["param"] == "version"
    assert state(gw) == before


def test_a_team_admin_and_an_organization_admin_cannot_move_a_team(gw: Any) -> None:
    for scope, team in (("team:search", "search"), ("organization:acme", None)):
        body = {"name": "lead", "admin_of": scope}
        if team is not None:
            body.update(team_id=team, models=["fast-chat"])
        lead = create_key(gw.base_url, **body)
        answer = httpx.put(
            gw.base_url + "/admin/teams/search/organization",
            json={"organization_id": "globex"},
            headers=bearer(lead["key"]),
            timeout=10,
        )
        assert answer.status_code == 403, answer.text
    assert call(gw, "GET", "/admin/teams/search").json()["organization_id"] == "acme"


def test_concurrent_moves_count_the_team_exactly_once(gw: Any) -> None:
    with ThreadPoolExecutor(6) as pool:
        answers = list(pool.map(lambda org: move(gw, "search", org).status_code,
                                ["globex", "acme"] * 6))  # fmt: skip
    assert set(answers) <= {200, 409}
    where = call(gw, "GET", "/admin/teams/search").json()["organization_id"]
    orgs = {o["id"]: o["teams"] for o in call(gw, "GET", "/admin/organizations").json()["data"]}
    assert orgs == {"acme": 2 if where == "acme" else 1, "globex": 1 if where == "globex" else 0,
                    "initech": 0}  # fmt: skip


@pytest.mark.parametrize("where", ["url", "table"])
def test_the_cli_moves_a_team(
    gw: Any,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    dynamo_endpoint: str,
    gateway_table: str,
    where: str,
) -> None:
    for name in ("AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_DEFAULT_PROFILE", "EDGEPROXY_URL"):
        monkeypatch.delenv(name, raising=False)
    for name, value in (
        ("EDGEPROXY_DYNAMODB_ENDPOINT", dynamo_endpoint),
        ("EDGEPROXY_TABLE", gateway_table),
        ("AWS_REGION", "us-east-1"),
        ("AWS_ACCESS_KEY_ID", "testing"),
        ("AWS_SECRET_ACCESS_KEY", "testing"),
        ("EDGEPROXY_ADMIN_KEY", ADMIN_KEY),
    ):
        monkeypatch.setenv(name, value)
    target = ["--url", gw.base_url] if where == "url" else []
    assert main(["teams", "move", "search", "--org", "globex", *target]) == 0
    assert json.loads(capsys.readouterr().out)["organization_id"] == "globex"
    assert main(["teams", "move", "search", "--org", "initech", *target]) != 0
    assert "organization `initech` does not allow" in capsys.readouterr().err
    assert call(gw, "GET", "/admin/teams/search").json()["organization_id"] == "globex"
