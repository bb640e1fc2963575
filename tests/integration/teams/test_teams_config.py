"""Organizations and teams in the configuration file: ``config export|diff|load`` round-trip
them (their sections become table items), and a bad entry writes nothing."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from edgeproxy.cli import main
from edgeproxy.config.loader import load_config_file
from edgeproxy_dev.mock_upstream import MockUpstream
from tests.fixtures.cli import point_the_cli_at
from tests.fixtures.configs import config, deployment
from tests.integration.keys.helpers import ADMIN_KEY, ENV, bearer, create_key


@pytest.fixture(autouse=True)
def cli_env(monkeypatch: pytest.MonkeyPatch, dynamo_endpoint: str) -> None:
    point_the_cli_at(monkeypatch, dynamo_endpoint, admin_key=ADMIN_KEY)


@pytest.fixture
def gw(start_gateway: Callable[..., Any], upstream_a: MockUpstream) -> Any:
    cfg = config(deployment("a", upstream_a), deployment("o", upstream_a, model="other-chat"))
    return start_gateway(cfg, env=ENV)


def call(gw: Any, method: str, path: str, body: Any = None) -> httpx.Response:
    return httpx.request(
        method, gw.base_url + path, json=body, headers=bearer(ADMIN_KEY), timeout=10
    )


def cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    status = main(list(argv))
    out, err = capsys.readouterr()
    return status, out, err


def seed(gw: Any) -> None:
    assert (
        call(
            gw, "POST", "/admin/organizations", {"id": "acme", "name": "Acme", "tags": {"cc": "7"}}
        ).status_code
        == 201
    )
    team = {
        "id": "search",
        "name": "Search",
        "organization_id": "acme",
        "models": ["fast-chat"],
        "budget_usd": 50.0,
        "budget_period": "monthly",
        "end_user_limits": {"rpm_limit": 3, "budget_usd": 0.5},
        "counter_shards": 4,
    }
    assert call(gw, "POST", "/admin/teams", team).status_code == 201


def test_export_declares_them_and_loads_back_unchanged(
    gw: Any, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    seed(gw)
    path = tmp_path / "live.yaml"
    status, out, _ = cli(capsys, "config", "export", "--url", gw.base_url)
    assert status == 0
    path.write_text(out)
    document = yaml.safe_load(out)
    assert document["organizations"] == [{"id": "acme", "name": "Acme", "tags": {"cc": "7"}}]
    assert document["teams"] == [
        {
            "id": "search",
            "name": "Search",
            "models": ["fast-chat"],
            "organization_id": "acme",
            "budget_usd": 50.0,
            "budget_period": "monthly",
            "end_user_limits": {"rpm_limit": 3, "budget_usd": 0.5},
            "counter_shards": 4,
        }
    ]
    assert load_config_file(path).public_models()  # `config check` takes the file
    status, out, _ = cli(capsys, "config", "load", str(path), "--url", gw.base_url)
    assert (status, out.startswith("no changes")) == (0, True)
    # Edited: the diff names the team's field, the load changes the item.
    document["teams"][0]["models"] = ["fast-chat", "other-chat"]
    document["teams"].append({"id": "ads", "name": "Ads", "organization_id": "acme"})
    path.write_text(yaml.safe_dump(document))
    status, out, _ = cli(capsys, "config", "diff", str(path), "--url", gw.base_url)
    assert status == 0
    assert "teams.search.models" in out
    assert "teams.ads" in out
    assert call(gw, "GET", "/admin/teams/ads").status_code == 404  # a diff writes nothing
    status, out, _ = cli(capsys, "config", "load", str(path), "--url", gw.base_url)
    assert status == 0, out
    assert call(gw, "GET", "/admin/teams/search").json()["models"] == ["fast-chat", "other-chat"]
    assert call(gw, "GET", "/admin/organizations/acme").json()["teams"] == 2
    # A declared section is whole: a team left out of it is deleted.
    document["teams"] = [t for t in document["teams"] if t["id"] != "ads"]
    path.write_text(yaml.safe_dump(document))
    assert cli(capsys, "config", "load", str(path), "--url", gw.base_url)[0] == 0
    assert call(gw, "GET", "/admin/teams/ads").status_code == 404
    # null puts the bucket back on one item (the default, which the file leaves out).
    assert call(gw, "GET", "/admin/teams/search").json()["counter_shards"] == 4
    patched = call(gw, "PATCH", "/admin/teams/search", {"counter_shards": None})
    assert patched.status_code == 200, patched.text
    assert call(gw, "GET", "/admin/teams/search").json()["counter_shards"] == 1
    status, out, _ = cli(capsys, "config", "export", "--url", gw.base_url)
    assert "counter_shards" not in out


@pytest.mark.parametrize(
    ("entry", "param"),
    [
        ({"id": "t2", "name": "T", "organization_id": "ghost"}, "teams[1].organization_id"),
        (
            {"id": "t2", "name": "T", "organization_id": "acme", "end_user_limits": {"x": 1}},
            "teams[1].end_user_limits.x",
        ),
        (
            {"id": "t2", "name": "T", "organization_id": "acme", "tpm_limit": -1},
            "teams[1].tpm_limit",
        ),
        (
            {"id": "t2", "name": "T", "organization_id": "acme", "models": ["nope"]},
            "teams[1].models",
        ),
        (
            {"id": "t2", "name": "T", "organization_id": "acme", "counter_shards": 33},
            "teams[1].counter_shards",
        ),
    ],
)
def test_a_bad_entry_is_a_400_naming_it_and_writes_nothing(
    gw: Any, entry: dict[str, Any], param: str
) -> None:
    seed(gw)
    current = call(gw, "GET", "/admin/config").json()
    document = current["document"]
    document["organizations"].append({"id": "new-org", "name": "N"})
    document["teams"].append(entry)
    body = {"document": document, "base_version": current["version"]}
    answer = call(gw, "PUT", "/admin/config", body)
    assert answer.status_code == 400, answer.text
    assert answer.json()["error"]["param"] == param
    assert call(gw, "GET", "/admin/organizations/new-org").status_code == 404
    assert call(gw, "GET", "/admin/teams/t2").status_code == 404


def test_a_team_left_out_while_it_owns_keys_is_refused(gw: Any) -> None:
    seed(gw)
    key = create_key(gw.base_url, models=["fast-chat"])
    assert (
        call(gw, "PUT", f"/admin/keys/{key['id']}/team", {"team_id": "search"}).status_code == 200
    )
    current = call(gw, "GET", "/admin/config").json()
    document = {**current["document"], "teams": []}
    answer = call(gw, "PUT", "/admin/config", {"document": document})
    assert answer.status_code == 400, answer.text
    assert answer.json()["error"]["code"] == "not_empty"
    assert call(gw, "GET", "/admin/teams/search").status_code == 200


def test_an_entry_named_like_a_default_still_exports(gw: Any) -> None:
    assert (
        call(gw, "POST", "/admin/organizations", {"id": "total", "name": "total"}).status_code
        == 201
    )
    document = call(gw, "GET", "/admin/config").json()["document"]
    assert document["organizations"] == [{"id": "total", "name": "total"}]
    answer = call(gw, "PUT", "/admin/config", {"document": document, "dry_run": True})
    assert answer.json()["changes"] == []


def test_a_file_moves_a_team_to_another_organization_and_drops_the_old_one(gw: Any) -> None:
    seed(gw)
    key = create_key(gw.base_url, team_id="search", models=["fast-chat"])
    current = call(gw, "GET", "/admin/config").json()
    document = current["document"]
    document["organizations"] = [{"id": "globex", "name": "G", "models": ["other-chat"]}]
    document["teams"][0]["organization_id"] = "globex"
    refused = call(gw, "PUT", "/admin/config", {"document": document})
    assert refused.status_code == 400, refused.text  # globex does not allow fast-chat
    assert refused.json()["error"]["param"] == "teams[0].models"
    assert call(gw, "GET", "/admin/teams/search").json()["organization_id"] == "acme"
    assert call(gw, "GET", "/admin/organizations/globex").status_code == 404
    document["organizations"][0]["models"] = ["fast-chat", "other-chat"]
    document["teams"][0]["name"] = "Search, moved"
    loaded = call(gw, "PUT", "/admin/config", {"document": document})
    assert loaded.status_code == 200, loaded.text
    team = call(gw, "GET", "/admin/teams/search").json()
    assert (team["organization_id"], team["name"], team["keys"]) == ("globex", "Search, moved", 1)
    assert call(gw, "GET", "/admin/organizations/globex").json()["teams"] == 1
    assert call(gw, "GET", "/admin/organizations/acme").status_code == 404  # empty, dropped
    assert call(gw, "GET", f"/admin/keys/{key['id']}/effective").json()["organization_id"] == (
        "globex"
    )
    actions = [e["action"] for e in call(gw, "GET", "/admin/audit").json()["data"]]
    assert "team.move" in actions
    again = call(gw, "GET", "/admin/config").json()["document"]
    assert again["teams"] == document["teams"]  # it round-trips
