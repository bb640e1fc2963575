"""``GET /admin/strategies`` and strategy parameters through the admin writes."""

from __future__ import annotations

from typing import Any

import httpx

from edgeproxy.config.strategies import Strategy
from edgeproxy_dev.mock_upstream import MockUpstream
from tests.integration.admin.helpers import admin, ok, two_deployments


def _put(base_url: str, path: str, body: dict[str, Any]) -> httpx.Response:
    version = ok(admin(base_url, "GET", path))["version"]
    return admin(base_url, "PUT", path, json=body, headers={"if-match": f'"{version}"'})


def test_the_registry_is_listed_with_each_strategys_parameters(
    start_gateway, upstream_a: MockUpstream, upstream_b: MockUpstream
) -> None:
    gw = start_gateway(
        two_deployments(
            upstream_a,
            upstream_b,
            router={"strategy_params": {"power-of-two-choices": {"intervene_inflight": 3}}},
        )
    )
    listed = ok(admin(gw.base_url, "GET", "/admin/strategies"))["strategies"]
    by_name = {s["name"]: s for s in listed}
    assert set(by_name) == {s.value for s in Strategy}
    shuffle = by_name["simple-shuffle"]
    # Its load rule is off by default, so it reads no counters until a threshold is set.
    assert (shuffle["default"], shuffle["reads_counters"], shuffle["configured"]) == (
        True,
        False,
        {},
    )
    param, prefill, *settings = shuffle["parameters"]
    assert (param["name"], param["type"], param["minimum"], param["default"]) == (
        "intervene_inflight",
        "integer or null",
        0,
        None,
    )
    # 001's prefill rule: off (null) by default, its settings listed under it.
    assert (prefill["name"], prefill["type"], prefill["default"]) == (
        "prefill",
        "object or null",
        None,
    )
    assert [s["name"] for s in settings] == [
        "prefill.intervene_tokens",
        "prefill.elephant_tokens",
        "prefill.elephant_limit",
        "prefill.affinity_ceiling",
        "prefill.hint_ttl_seconds",
    ]
    assert by_name["power-of-two-choices"]["configured"] == {"intervene_inflight": 3}
    assert by_name["hash_affinity"]["parameters"] == []
    assert by_name["hash_affinity"]["reads_counters"] is False
    client = admin(gw.base_url, "GET", "/admin/strategies", key="sk-client-plain")
    assert client.status_code == 403


def test_admin_writes_validate_parameters_and_unknown_keys_are_400s(
    start_gateway, upstream_a: MockUpstream, upstream_b: MockUpstream
) -> None:
    gw = start_gateway(two_deployments(upstream_a, upstream_b))
    base = gw.base_url
    for body, words in (
        ({"strategy_params": {"simple-shuffle": {"intervene": 2}}}, "unknown parameter"),
        ({"strategy_params": {"least-busy": {"intervene_inflight": -1}}}, "greater than"),
        ({"strategy_params": {"fastest": {}}}, "power-of-two-choices"),
    ):
        refused = _put(base, "/admin/router-settings", body)
        assert refused.status_code == 400, refused.text
        error = refused.json()["error"]
        assert error["param"].startswith("strategy_params"), error
        assert words in error["message"]
    bad_tier = {"tier_strategy_params": {"1": {"weight_priority": {"intervene_inflight": 1}}}}
    refused = _put(base, "/admin/pools/fast-chat", bad_tier)
    assert refused.status_code == 400
    assert "weight_priority takes: no parameters" in refused.json()["error"]["message"]

    ok(
        _put(
            base,
            "/admin/router-settings",
            {"strategy_params": {"simple-shuffle": {"intervene_inflight": 20}}},
        )
    )
    pool = ok(
        _put(
            base,
            "/admin/pools/fast-chat",
            {"tier_strategy_params": {"1": {"simple-shuffle": {"intervene_inflight": None}}}},
        )
    )
    assert pool["effective"]["params_by_tier"] == {
        "1": {"intervene_inflight": None, "prefill": None},
        "0": {"intervene_inflight": 20, "prefill": None},
    }
    listed = ok(admin(base, "GET", "/admin/strategies"))["strategies"]
    assert {s["name"]: s["configured"] for s in listed}["simple-shuffle"] == {
        "intervene_inflight": 20
    }
