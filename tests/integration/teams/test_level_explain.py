"""The routing explainer names a refusal at a level above the key: team, organization or
end user; budget, rpm, tpm or max_parallel_requests; with the level and its id.

``POST /admin/route/explain`` (and ``edgeproxy route explain``) reads the levels' counters
as the reservation would meet them and charges nothing: each explained refusal is the
one the same request then gets, and explaining writes no level item.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import httpx
import pytest

from edgeproxy_dev.mock_upstream import MockUpstream
from tests.fixtures.cli import point_the_cli_at, run_cli
from tests.fixtures.configs import config, deployment
from tests.fixtures.table import TableView
from tests.integration.keys.helpers import ADMIN_KEY, ENV, HELLO, bearer, create_key

BODY = {"model": "fast-chat", "messages": HELLO, "max_tokens": 20}
PRICE = 1_000_000.0  # $1 a token: one request's estimate is $30


@pytest.fixture
def gw(start_gateway: Callable[..., Any], upstream_a: MockUpstream) -> Any:
    dep = deployment("a", upstream_a, input_price_per_mtok=PRICE, output_price_per_mtok=PRICE)
    return start_gateway(config(dep), env=ENV)


def _admin(gw: Any, path: str, body: dict[str, Any]) -> None:
    answer = httpx.post(gw.base_url + path, json=body, headers=bearer(ADMIN_KEY), timeout=10)
    assert answer.status_code == 201, answer.text


def _member(gw: Any, org: dict[str, Any], team: dict[str, Any]) -> dict[str, Any]:
    _admin(gw, "/admin/organizations", {"name": org["id"], **org})
    _admin(gw, "/admin/teams", {"name": team["id"], "organization_id": org["id"], **team})
    return create_key(gw.base_url, name=f"in-{team['id']}", team_id=team["id"])


def _explain(gw: Any, key_id: str, **more: Any) -> dict[str, Any]:
    order = {"operation": "chat", "body": BODY, "key_id": key_id, **more}
    answer = httpx.post(
        gw.base_url + "/admin/route/explain", json=order, headers=bearer(ADMIN_KEY), timeout=10
    )
    assert answer.status_code == 200, answer.text
    return answer.json()


def _chat(gw: Any, key: str, **headers: str) -> httpx.Response:
    return httpx.post(
        gw.base_url + "/v1/chat/completions",
        json=BODY,
        headers={**bearer(key), **headers},
        timeout=30,
    )


def _level_items(table: TableView) -> list[Any]:
    return sorted(
        (i["pk"]["S"], i["sk"]["S"]) for i in table.scan() if i["pk"]["S"].startswith("level#")
    )


@pytest.mark.parametrize(
    ("org", "team", "end_user", "level", "level_id", "reason"),
    [
        ({"id": "o1"}, {"id": "t1", "rpm_limit": 1}, None, "team", "t1", "rpm"),
        ({"id": "o2", "budget_usd": 40}, {"id": "t2"}, None, "organization", "o2", "budget"),
        ({"id": "o3"}, {"id": "t3", "tpm_limit": 40}, None, "team", "t3", "tpm"),
        (
            {"id": "o4"},
            {"id": "t4", "end_user_limits": {"rpm_limit": 1}},
            "alice",
            "end_user",
            "alice",
            "rpm",
        ),
    ],
)
def test_an_explained_level_refusal_is_the_one_the_request_then_gets(
    gw: Any,
    table: TableView,
    org: dict[str, Any],
    team: dict[str, Any],
    end_user: str | None,
    level: str,
    level_id: str,
    reason: str,
) -> None:
    key = _member(gw, org, team)
    named = {"end_user": end_user} if end_user else {}
    headers = {"x-edgeproxy-end-user": end_user} if end_user else {}
    before = _explain(gw, key["id"], **named)
    assert before["refused_by"] is None
    assert [row["level"] for row in before["levels"]] == [level]
    assert _chat(gw, key["key"], **headers).status_code == 200  # spends the level's room

    after = _explain(gw, key["id"], **named)
    refused = after["refused_by"]
    assert (refused["level"], refused["id"], refused["reason"]) == (level, level_id, reason)
    row = after["levels"][0]
    counted = row["rpm_limit"] is not None or row["tpm_limit"] is not None
    assert row["requests_this_minute"] == (1 if counted else 0)
    assert (row["spend_usd"] > 0) is (row["budget_usd"] is not None)
    items = _level_items(table)
    _explain(gw, key["id"], **named)
    assert _level_items(table) == items  # explaining charges nothing

    answer = _chat(gw, key["key"], **headers)
    assert answer.status_code == 429
    assert answer.json()["error"]["message"] == refused["message"]


def test_a_full_team_is_explained_as_max_parallel_and_the_cli_names_the_level(
    gw: Any,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    dynamo_endpoint: str,
) -> None:
    key = _member(gw, {"id": "o5"}, {"id": "t5", "max_parallel_requests": 0})
    refused = _explain(gw, key["id"])["refused_by"]
    assert (refused["level"], refused["id"], refused["reason"]) == ("team", "t5", "parallel")
    assert "max_parallel_requests: 0" in refused["message"]

    point_the_cli_at(monkeypatch, dynamo_endpoint, admin_key=ADMIN_KEY)
    status, out, err = run_cli(
        capsys, "route", "explain", "--model", "fast-chat", "--key-id", key["id"],
        "--url", gw.base_url,
    )  # fmt: skip
    assert status == 0, err
    assert "refused at level team `t5` (parallel): Too many requests in flight" in out

    # A teamless key meets no level.
    alone = create_key(gw.base_url, name="alone")
    report = _explain(gw, alone["id"])
    assert (report["levels"], report["refused_by"]) == ([], None)
