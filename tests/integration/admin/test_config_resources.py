"""Deployments, pools and fallback chains over the admin API: CRUD, validation, 404s, versions."""

from __future__ import annotations

from typing import Any

from edgeproxy_dev.mock_upstream import MockUpstream
from tests.fixtures.configs import deployment
from tests.integration.admin.helpers import admin, chat, ok, two_deployments


def _version(base_url: str) -> int:
    return int(ok(admin(base_url, "GET", "/admin/router-settings"))["version"])


def _send(base_url: str, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
    return admin(base_url, method, path, json=body, headers={"if-match": f'"{_version(base_url)}"'})


def test_deployments_are_created_read_patched_replaced_and_deleted(
    start_gateway, make_upstream, upstream_a: MockUpstream, upstream_b: MockUpstream
) -> None:
    gw = start_gateway(two_deployments(upstream_a, upstream_b))
    base = gw.base_url
    c = make_upstream("c")
    new = deployment("c", c, model="other-chat")

    created = ok(_send(base, "POST", "/admin/deployments", new), 201)
    assert (created["id"], created["model"], created["weight"]) == ("c", "other-chat", 1.0)
    assert chat(base, "other-chat").headers["x-edgeproxy-deployment"] == "c"  # routes at once

    taken = _send(base, "POST", "/admin/deployments", new)
    assert (taken.status_code, taken.json()["error"]["code"]) == (409, "already_exists")
    assert ok(_send(base, "PATCH", "/admin/deployments/c", {"weight": 0.5}))["weight"] == 0.5
    replaced = ok(_send(base, "PUT", "/admin/deployments/c", {**new, "id": "c", "priority": 2}))
    assert (replaced["weight"], replaced["priority"]) == (1.0, 2)  # PUT replaces the whole
    assert ok(admin(base, "GET", "/admin/deployments/c"))["priority"] == 2
    ids = [d["id"] for d in ok(admin(base, "GET", "/admin/deployments"))["deployments"]]
    assert ids == ["a", "b", "c"]

    ok(_send(base, "DELETE", "/admin/deployments/c"))
    assert admin(base, "GET", "/admin/deployments/c").status_code == 404
    assert chat(base, "other-chat").status_code == 404


def test_bad_deployments_are_400_and_unknown_ids_404(
    start_gateway, upstream_a: MockUpstream, upstream_b: MockUpstream
) -> None:
    gw = start_gateway(two_deployments(upstream_a, upstream_b))
    base = gw.base_url
    bad = deployment("c", upstream_a, weight=-1)

    answer = _send(base, "POST", "/admin/deployments", bad)
    assert (answer.status_code, answer.json()["error"]["param"]) == (400, "weight")
    assert (
        _send(base, "POST", "/admin/deployments", {**bad, "weight": 1, "wieght": 2}).status_code
        == 400
    )
    assert _send(base, "PATCH", "/admin/deployments/a", {"provider": "nope"}).status_code == 400
    # A typo names the deployment by the id the call used, never by its position.
    typo = _send(base, "PATCH", "/admin/deployments/b", {"wieght": 2})
    assert typo.status_code == 400
    assert typo.json()["error"]["message"] == (
        "configuration: deployments[id=b].wieght: extra inputs are not permitted"
    )
    assert (
        _send(base, "PUT", "/admin/deployments/a", {**bad, "weight": 1}).status_code == 400
    )  # id differs
    for method in ("GET", "PATCH", "DELETE"):
        missing = _send(
            base, method, "/admin/deployments/zzz", {"weight": 1} if method == "PATCH" else None
        )
        assert missing.status_code == 404, method
    assert ok(admin(base, "GET", "/admin/deployments/a"))["weight"] == 1.0


def test_pools_and_fallbacks_are_edited_and_checked_against_the_deployments(
    start_gateway, make_upstream, upstream_a: MockUpstream, upstream_b: MockUpstream
) -> None:
    gw = start_gateway(two_deployments(upstream_a, upstream_b))
    base = gw.base_url
    ok(
        _send(
            base, "POST", "/admin/deployments", deployment("c", make_upstream("c"), model="spare")
        ),
        201,
    )

    pool = ok(
        _send(
            base,
            "PUT",
            "/admin/pools/fast-chat",
            {
                "strategy": "least-busy",
                "tier_strategies": {"0": "weight_priority"},
                "sticky": {"idle_ttl_seconds": 600},
            },
        )
    )
    assert pool["effective"] == {
        "strategy_by_tier": {"1": "least-busy", "0": "weight_priority"},
        "params_by_tier": {"1": {"intervene_inflight": 8}, "0": {}},
        "sticky": {"enabled": True, "idle_ttl_seconds": 600},
    }
    assert pool["deployments"] == ["a", "b"]
    assert _send(base, "PUT", "/admin/pools/nope", {}).status_code == 404
    assert _send(base, "PUT", "/admin/pools/fast-chat", {"strategy": "x"}).status_code == 400
    assert [p["model"] for p in ok(admin(base, "GET", "/admin/pools"))["pools"]] == [
        "fast-chat",
        "spare",
    ]

    chains = ok(_send(base, "PUT", "/admin/fallbacks/general/fast-chat", {"to": ["spare"]}))
    assert chains["fallbacks"] == [
        # continuation None: the chain follows router.continuation (off by default)
        {"model": "fast-chat", "reason": "general", "to": ["spare"], "continuation": None}
    ]
    assert (
        _send(base, "PUT", "/admin/fallbacks/general/fast-chat", {"to": ["ghost"]}).status_code
        == 400
    )
    assert (
        _send(base, "PUT", "/admin/fallbacks/whenever/fast-chat", {"to": ["spare"]}).status_code
        == 400
    )
    # The pool of `c` is still needed by the chain: deleting it is refused, saying why.
    refused = _send(base, "DELETE", "/admin/deployments/c")
    assert refused.status_code == 400
    assert "spare" in refused.json()["error"]["message"]

    ok(_send(base, "DELETE", "/admin/fallbacks/general/fast-chat"))
    assert _send(base, "DELETE", "/admin/fallbacks/general/fast-chat").status_code == 404
    ok(_send(base, "DELETE", "/admin/pools/fast-chat"))
    assert ok(admin(base, "GET", "/admin/pools/fast-chat"))["settings"]["strategy"] is None
    ok(_send(base, "DELETE", "/admin/deployments/c"))


def test_the_openapi_document_describes_every_admin_route(
    start_gateway, upstream_a: MockUpstream, upstream_b: MockUpstream
) -> None:
    from edgeproxy.api.admin.routes import admin_routes

    gw = start_gateway(two_deployments(upstream_a, upstream_b))
    doc = ok(admin(gw.base_url, "GET", "/admin/openapi.json"))

    assert doc["openapi"].startswith("3.")
    described = {(m.upper(), p) for p, ops in doc["paths"].items() for m in ops}
    served = {(r.method, r.path.replace(":path", "")) for r in admin_routes()}
    assert described == served
    put = doc["paths"]["/admin/router-settings"]["put"]
    assert put["requestBody"]["content"]["application/json"]["schema"]["allOf"] == [
        {"$ref": "#/components/schemas/RouterSettings"}
    ]
    assert {"409", "401", "403"} <= set(put["responses"])
    assert "428" not in put["responses"]  # without a version it is last-writer-wins
    assert "428" in doc["paths"]["/admin/pools/{model}"]["put"]["responses"]
    schemas = doc["components"]["schemas"]
    assert {"RouterSettings", "Deployment", "PoolSettings", "ForceOpen", "ErrorBody"} <= set(
        schemas
    )
    assert schemas["CircuitSettings"]["properties"]["allowed_fails"]["minimum"] == 0
