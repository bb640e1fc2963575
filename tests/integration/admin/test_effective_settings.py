"""003's levels through the admin API and the CLI: model rules written, refused, and reported.

``GET /admin/pools/{pool}/effective`` answers every setting with the level it
came from; ``/admin/model-rules/{model}`` writes the model levels (validated
as at load); ``edgeproxy pools effective`` prints the same, over HTTP or on
the table. A request on a protocol with a rule is routed by that rule's
strategy (the routing metadata names it).
"""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from edgeproxy.cli import main
from edgeproxy_dev.mock_upstream import MockUpstream
from tests.fixtures.cli import point_the_cli_at
from tests.integration.admin.helpers import (
    ADMIN_KEY,
    CLIENT_KEY,
    admin,
    ok,
    two_deployments,
)

RULES = {
    "strategy": "weighted_random",
    "strategy_params": {"least-busy": {"intervene_inflight": 4}},
    "protocols": {"anthropic.messages": {"strategy": "least-busy"}},
    "capabilities": {"embeddings": {"strategy": "price-based"}},
}


@pytest.fixture(autouse=True)
def cli_env(monkeypatch: pytest.MonkeyPatch, dynamo_endpoint: str, gateway_table: str) -> None:
    point_the_cli_at(monkeypatch, dynamo_endpoint, gateway_table, admin_key=ADMIN_KEY)


def _put(base: str, path: str, body: dict[str, Any]) -> httpx.Response:
    version = ok(admin(base, "GET", "/admin/model-rules"))["version"]
    return admin(base, "PUT", path, json=body, headers={"if-match": f'"{version}"'})


def _messages(base: str) -> dict[str, Any]:
    answer = httpx.post(
        base + "/v1/messages",
        json={
            "model": "fast-chat",
            "max_tokens": 16,
            "messages": [{"role": "user", "content": "hi"}],
        },
        headers={"x-api-key": CLIENT_KEY, "x-unified-routing-metadata": "true"},
        timeout=30,
    )
    assert answer.status_code == 200, answer.text
    return answer.json()


def _chat(base: str) -> dict[str, Any]:
    answer = httpx.post(
        base + "/v1/chat/completions",
        json={"model": "fast-chat", "messages": [{"role": "user", "content": "hi"}]},
        headers={"authorization": f"Bearer {CLIENT_KEY}", "x-unified-routing-metadata": "true"},
        timeout=30,
    )
    assert answer.status_code == 200, answer.text
    return dict(answer.json())


def test_model_rules_are_written_reported_and_routed_by(
    start_gateway: Any, upstream_a: MockUpstream, upstream_b: MockUpstream
) -> None:
    gw = start_gateway(
        two_deployments(
            upstream_a, upstream_b, pools={"fast-chat": {"tier_strategies": {1: "weight_priority"}}}
        )
    )
    base = gw.base_url
    stored = _put(base, "/admin/model-rules/fast-chat", RULES)
    assert stored.status_code == 200, stored.text
    assert stored.json()["settings"]["protocols"]["anthropic.messages"]["strategy"] == "least-busy"

    view = ok(admin(base, "GET", "/admin/pools/fast-chat/effective?protocol=anthropic.messages"))
    assert (view["operation"], view["protocol"]) == ("chat", "anthropic.messages")
    assert view["tiers"]["1"]["strategy"] == {
        "value": "weight_priority",
        "level": "tier",
        "source": "pools.fast-chat.tier_strategies.1",
    }
    assert view["tiers"]["0"]["strategy"] == {
        "value": "least-busy",
        "level": "model_protocol",
        "source": "models.fast-chat.protocols.anthropic.messages.strategy",
    }
    assert view["tiers"]["0"]["params"]["intervene_inflight"]["level"] == "model"
    assert view["sticky"]["enabled"]["level"] == "global"
    plain = ok(admin(base, "GET", "/admin/pools/fast-chat/effective"))
    assert plain["tiers"]["0"]["strategy"]["level"] == "model"
    embeddings = ok(admin(base, "GET", "/admin/pools/fast-chat/effective?operation=embeddings"))
    assert embeddings["tiers"]["0"]["strategy"]["level"] == "model_capability"

    # Without the tier override, a request on each surface routes by its level's strategy.
    dropped = admin(base, "DELETE", "/admin/pools/fast-chat", params={"version": view["version"]})
    assert dropped.status_code == 200, dropped.text
    assert _messages(base)["unified_routing"]["strategy"] == "least-busy"
    assert _chat(base)["unified_routing"]["strategy"] == "weighted_random"


def test_model_rules_written_through_an_alias_are_the_models(
    start_gateway: Any, upstream_a: MockUpstream, upstream_b: MockUpstream
) -> None:
    aliases = {"legacy": {"model": "fast-chat"}}
    gw = start_gateway(two_deployments(upstream_a, upstream_b, aliases=aliases))
    stored = _put(gw.base_url, "/admin/model-rules/legacy", {"strategy": "least-busy"})
    assert stored.status_code == 200, stored.text
    assert stored.json()["model"] == "fast-chat"
    rules = ok(admin(gw.base_url, "GET", "/admin/model-rules"))["models"]
    assert rules == {
        "fast-chat": {
            "strategy": "least-busy",
            "strategy_params": {},
            "protocols": {},
            "capabilities": {},
        }
    }
    view = ok(admin(gw.base_url, "GET", "/admin/pools/legacy/effective"))
    assert (view["pool"], view["tiers"]["0"]["strategy"]["level"]) == ("fast-chat", "model")
    assert view["aliases"] == ["legacy"]


@pytest.mark.parametrize(
    ("path", "body", "status", "words"),
    [
        ("/admin/model-rules/fast-chat", {"strategy": "fastest"}, 400, "strategy"),
        ("/admin/model-rules/fast-chat", {"protocols": {"grpc": {}}}, 400, "unknown protocol"),
        ("/admin/model-rules/fast-chat", {"capabilities": {"telepathy": {}}}, 400, "telepathy"),
        (
            "/admin/model-rules/fast-chat",
            {"protocols": {"openai.chat": {"strategy_params": {"weight_priority": {"x": 1}}}}},
            400,
            "unknown parameter",
        ),
        ("/admin/model-rules/no-such", {"strategy": "least-busy"}, 404, "no-such"),
    ],
)
def test_bad_model_rules_are_refused(
    start_gateway: Any,
    upstream_a: MockUpstream,
    upstream_b: MockUpstream,
    path: str,
    body: dict[str, Any],
    status: int,
    words: str,
) -> None:
    gw = start_gateway(two_deployments(upstream_a, upstream_b))
    refused = _put(gw.base_url, path, body)
    assert refused.status_code == status, refused.text
    assert words in refused.json()["error"]["message"]
    assert ok(admin(gw.base_url, "GET", "/admin/model-rules"))["models"] == {}


def test_rules_of_a_model_no_deployment_serves_are_404_by_path_and_400_in_a_document(
    start_gateway: Any, upstream_a: MockUpstream, upstream_b: MockUpstream
) -> None:
    # The path names the resource (404, as /admin/pools/{model}); a document naming it is
    # an invalid body (400), the README's rule for a configuration.
    base = start_gateway(two_deployments(upstream_a, upstream_b)).base_url
    by_path = _put(base, "/admin/model-rules/nosuchmodel", {"strategy": "least-busy"})
    assert (by_path.status_code, by_path.json()["error"]["param"]) == (404, "model")
    current = ok(admin(base, "GET", "/admin/config"))
    document = {**current["document"], "models": {"nosuchmodel": {"strategy": "least-busy"}}}
    loaded = admin(
        base,
        "PUT",
        "/admin/config",
        json={"document": document, "base_version": current["version"], "dry_run": True},
    )
    assert loaded.status_code == 400, loaded.text
    assert "nosuchmodel" in loaded.json()["error"]["message"]


def test_the_effective_view_refuses_unknown_pools_and_surfaces(
    start_gateway: Any, upstream_a: MockUpstream, upstream_b: MockUpstream
) -> None:
    gw = start_gateway(two_deployments(upstream_a, upstream_b))
    base = gw.base_url
    assert admin(base, "GET", "/admin/pools/nope/effective").status_code == 404
    assert admin(base, "GET", "/admin/pools/fast-chat/effective?operation=x").status_code == 400
    assert admin(base, "GET", "/admin/pools/fast-chat/effective?protocol=x").status_code == 400
    assert admin(base, "GET", "/admin/pools/fast-chat/effective", key=CLIENT_KEY).status_code == 403
    assert ok(admin(base, "GET", "/admin/pools/fast-chat"))["model"] == "fast-chat"  # still there


def test_the_cli_prints_each_setting_with_its_level(
    start_gateway: Any,
    capsys: pytest.CaptureFixture[str],
    upstream_a: MockUpstream,
    upstream_b: MockUpstream,
) -> None:
    gw = start_gateway(two_deployments(upstream_a, upstream_b, models={"fast-chat": RULES}))
    assert (
        main(
            [
                "pools",
                "effective",
                "fast-chat",
                "--url",
                gw.base_url,
                "--protocol",
                "anthropic.messages",
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    lines = {" ".join(line.split()[:3]): line.split() for line in out.splitlines()[2:]}
    assert lines["tier 0 strategy"][3:6] == [
        '"least-busy"',
        "model_protocol",
        "models.fast-chat.protocols.anthropic.messages.strategy",
    ]
    assert (
        "precedence: tier > pool > model_capability > model_protocol > model > global > default"
        in out
    )
    assert main(["pools", "effective", "fast-chat", "--json"]) == 0  # on the table
    table_view = json.loads(capsys.readouterr().out)
    assert table_view["tiers"]["0"]["strategy"]["level"] == "model"
    assert main(["pools", "effective", "nope", "--url", gw.base_url]) == 1
    assert "404" in capsys.readouterr().err
