"""The response cache's rules through the admin API and ``edgeproxy cache``: set, used, dropped."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import httpx
import pytest

from edgeproxy_dev.mock_upstream import MockUpstream
from tests.fixtures.cli import point_the_cli_at
from tests.fixtures.cli import run_cli as run
from tests.integration.keys.helpers import ADMIN_KEY, ENV, bearer, create_key
from tests.integration.usage.helpers import chat, gateway_config, priced

ROOT = bearer(ADMIN_KEY)


@pytest.fixture(autouse=True)
def cli_env(monkeypatch: pytest.MonkeyPatch, dynamo_endpoint: str, gateway_table: str) -> None:
    point_the_cli_at(monkeypatch, dynamo_endpoint, gateway_table, admin_key=ADMIN_KEY)


def _cache(gw: Any) -> dict[str, Any]:
    answer = httpx.get(gw.base_url + "/admin/cache", headers=ROOT, timeout=10)
    assert answer.status_code == 200, answer.text
    body: dict[str, Any] = answer.json()
    return body


def test_a_rule_set_through_the_admin_api_turns_the_cache_on_and_its_delete_off(
    start_gateway: Callable[..., Any], upstream_a: MockUpstream
) -> None:
    gw = start_gateway(gateway_config(priced("a", upstream_a)), env=ENV)
    key = create_key(gw.base_url, name="app")["key"]
    assert "x-edgeproxy-cache" not in chat(gw.base_url, key).headers  # off by default
    current = _cache(gw)
    assert current["cache"] == {"pools": {}, "teams": {}, "keys": {}}
    put = httpx.put(
        gw.base_url + "/admin/cache/pools/fast-chat",
        json={"scope": "gateway", "ttl_seconds": 60, "version": current["version"]},
        headers=ROOT,
        timeout=10,
    )
    assert put.status_code == 200, put.text
    assert put.json()["cache"]["pools"]["fast-chat"]["scope"] == "gateway"
    assert chat(gw.base_url, key).headers["x-edgeproxy-cache"] == "miss"
    assert chat(gw.base_url, key).headers["x-edgeproxy-cache"] == "hit"
    gone = httpx.delete(
        gw.base_url + "/admin/cache/pools/fast-chat",
        params={"version": put.json()["version"]},
        headers=ROOT,
        timeout=10,
    )
    assert gone.status_code == 200, gone.text
    assert "x-edgeproxy-cache" not in chat(gw.base_url, key).headers


@pytest.mark.parametrize(
    ("path", "body", "status", "says"),
    [
        ("/admin/cache/pools/no-such-pool", {}, 400, "no deployment serves"),
        ("/admin/cache/pools/fast-chat", {"ttl_seconds": 0}, 400, "ttl_seconds"),
        ("/admin/cache/pools/fast-chat", {"scope": "everyone"}, 400, "scope"),
        ("/admin/cache/levels/fast-chat", {}, 404, "not a cache level"),
        ("/admin/cache/keys/not-an-id", {}, 400, "keys"),
    ],
)
def test_bad_rules_are_a_clear_4xx(
    start_gateway: Callable[..., Any],
    upstream_a: MockUpstream,
    path: str,
    body: dict[str, Any],
    status: int,
    says: str,
) -> None:
    gw = start_gateway(gateway_config(priced("a", upstream_a)), env=ENV)
    version = _cache(gw)["version"]
    answer = httpx.put(
        gw.base_url + path, json={**body, "version": version}, headers=ROOT, timeout=10
    )
    assert answer.status_code == status, answer.text
    assert says in answer.json()["error"]["message"]
    assert _cache(gw)["version"] == version  # nothing written


def test_a_client_key_may_not_change_the_rules(
    start_gateway: Callable[..., Any], upstream_a: MockUpstream
) -> None:
    gw = start_gateway(gateway_config(priced("a", upstream_a)), env=ENV)
    key = create_key(gw.base_url, name="app")["key"]
    answer = httpx.put(
        gw.base_url + "/admin/cache/pools/fast-chat",
        json={"version": _cache(gw)["version"]},
        headers=bearer(key),
        timeout=10,
    )
    assert answer.status_code == 403


def test_the_cli_sets_shows_and_deletes_rules(
    start_gateway: Callable[..., Any], upstream_a: MockUpstream, capsys: Any
) -> None:
    gw = start_gateway(gateway_config(priced("a", upstream_a)), env=ENV)
    url = ["--url", gw.base_url]
    status, out, err = run(capsys, "cache", "show", *url)
    assert (status, out.strip()) == (0, "no cache rules: the cache is off"), err
    status, out, err = run(
        capsys, "cache", "set", "pools", "fast-chat", "--scope", "team", "--ttl", "600",
        "--coalesce", *url,
    )  # fmt: skip
    assert status == 0, err
    assert out.strip() == "pools fast-chat: scope=team ttl=600s coalesce"
    rule = _cache(gw)["cache"]["pools"]["fast-chat"]
    assert (rule["scope"], rule["ttl_seconds"], rule["coalesce"]) == ("team", 600, True)
    status, _, err = run(capsys, "cache", "set", "pools", "ghost", *url)
    assert status == 1
    assert "no deployment serves" in err
    status, out, err = run(capsys, "cache", "delete", "pools", "fast-chat", *url)
    assert (status, out.strip()) == (0, "no cache rules: the cache is off"), err


def _put(gw: Any, path: str, version: int) -> httpx.Response:
    return httpx.put(gw.base_url + path, json={"version": version}, headers=ROOT, timeout=10)


def test_a_rule_on_a_team_or_key_the_table_does_not_hold_is_refused_naming_the_field(
    start_gateway: Callable[..., Any], upstream_a: MockUpstream
) -> None:
    gw = start_gateway(gateway_config(priced("a", upstream_a)), env=ENV)
    version = _cache(gw)["version"]
    for path, field in (
        ("/admin/cache/teams/ghost-team", "cache.teams.ghost-team"),
        ("/admin/cache/keys/0123456789abcdef", "cache.keys.0123456789abcdef"),
    ):
        answer = _put(gw, path, version)
        assert answer.status_code == 400, answer.text
        error = answer.json()["error"]
        assert error["param"] == field
        assert "there is no" in error["message"]
    assert _cache(gw)["version"] == version  # nothing written
    # The same names once they exist: accepted.
    org = {"id": "acme", "name": "Acme"}
    team = {"id": "ghost-team", "name": "G", "organization_id": "acme"}
    for path, body in (("/admin/organizations", org), ("/admin/teams", team)):
        made = httpx.post(gw.base_url + path, json=body, headers=ROOT, timeout=10)
        assert made.status_code == 201, made.text
    key_id = create_key(gw.base_url, name="app")["id"]
    answer = _put(gw, "/admin/cache/teams/ghost-team", version)
    assert answer.status_code == 200, answer.text
    answer = _put(gw, f"/admin/cache/keys/{key_id}", answer.json()["version"])
    assert answer.status_code == 200, answer.text
    assert set(answer.json()["cache"]["keys"]) == {key_id}


def test_a_whole_configuration_loaded_with_a_ghost_team_or_key_rule_is_refused(
    start_gateway: Callable[..., Any], upstream_a: MockUpstream
) -> None:
    gw = start_gateway(gateway_config(priced("a", upstream_a)), env=ENV)
    got = httpx.get(gw.base_url + "/admin/config", headers=ROOT, timeout=10).json()
    document = got["document"]

    def load(doc: dict[str, Any]) -> httpx.Response:
        body = {"document": doc, "base_version": got["version"], "force": True}
        return httpx.put(gw.base_url + "/admin/config", json=body, headers=ROOT, timeout=10)

    ghost_key = {**document, "cache": {"keys": {"0123456789abcdef": {}}}}
    answer = load(ghost_key)
    assert answer.status_code == 400, answer.text
    assert answer.json()["error"]["param"] == "cache.keys.0123456789abcdef"
    ghost_team = {**document, "cache": {"teams": {"research": {"scope": "team"}}}}
    answer = load(ghost_team)
    assert answer.status_code == 400, answer.text
    assert answer.json()["error"]["param"] == "cache.teams.research"
    assert _cache(gw)["version"] == got["version"]  # nothing written
    # A file that declares the team in its own teams: section may name it.
    declared = {
        **ghost_team,
        "organizations": [{"id": "lab", "name": "Lab"}],
        "teams": [{"id": "research", "name": "Research", "organization_id": "lab"}],
    }
    answer = load(declared)
    assert answer.status_code == 200, answer.text
    assert set(_cache(gw)["cache"]["teams"]) == {"research"}
