"""Client keys at the edge: every route refuses bad keys; models, limits and budgets hold.

One gateway with keys required and a bootstrap admin key; keys are created
through ``POST /admin/keys`` as an operator would.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import httpx
import pytest

from edgeproxy_dev.mock_upstream import MockUpstream
from tests.fixtures.clock import FleetClock
from tests.fixtures.configs import config, deployment
from tests.fixtures.table import wait_for
from tests.integration.keys.helpers import ADMIN_KEY, ENV, HELLO, bearer, chat, create_key

# (method, path, JSON body): every /v1/* route and every /admin/keys route.
V1_ROUTES = [
    ("POST", "/v1/chat/completions", {"model": "fast-chat", "messages": HELLO}),
    ("POST", "/v1/completions", {"model": "fast-chat", "prompt": "hi"}),
    ("POST", "/v1/embeddings", {"model": "text-embed", "input": "hi"}),
    ("POST", "/v1/messages", {"model": "fast-chat", "max_tokens": 5, "messages": HELLO}),
    ("POST", "/v1/messages/count_tokens", {"model": "fast-chat", "messages": HELLO}),
    ("GET", "/v1/models", None),
    ("GET", "/v1/models/fast-chat", None),
    ("GET", "/v1/models/fast-chat/deployments", None),
]
ADMIN_ROUTES = [
    ("POST", "/admin/keys", {"name": "x"}),
    ("GET", "/admin/keys", None),
    ("GET", "/admin/keys/0123456789abcdef", None),
    ("DELETE", "/admin/keys/0123456789abcdef", None),
    ("POST", "/admin/keys/0123456789abcdef/revoke", None),
]


@pytest.fixture
def gateway(start_gateway: Callable[..., Any], upstream_a: MockUpstream) -> Any:
    cfg = config(
        deployment("a", upstream_a, input_price_per_mtok=1000.0, output_price_per_mtok=1000.0),
        deployment("emb", upstream_a, model="text-embed", operations=["embeddings"]),
        deployment("other", upstream_a, model="other-chat"),
    )
    return start_gateway(cfg, env=ENV)


def call(base_url: str, method: str, path: str, body: Any, headers: dict[str, str]) -> Any:
    return httpx.request(method, base_url + path, json=body, headers=headers, timeout=30)


def test_every_route_refuses_missing_malformed_unknown_revoked_and_expired_keys(
    gateway: Any, clock: FleetClock
) -> None:
    revoked = create_key(gateway.base_url, name="revoked")
    expiring = create_key(gateway.base_url, name="expiring", expires_at=clock.now() + 60)
    assert httpx.delete(
        f"{gateway.base_url}/admin/keys/{revoked['id']}", headers=bearer(ADMIN_KEY)
    ).json()["revoked"]
    assert chat(gateway.base_url, expiring["key"]).status_code == 200
    clock.advance(61)
    bad = {
        "missing": ({}, "You didn't provide an API key."),
        "malformed": (bearer("ep-" + "x" * 400), "Malformed API key."),
        "unknown": (bearer("ep-not-a-key"), "Incorrect API key provided."),
        "revoked": (bearer(revoked["key"]), "This API key has been revoked."),
        "expired": ({"x-api-key": expiring["key"]}, "This API key has expired."),
    }
    for method, path, body in V1_ROUTES + ADMIN_ROUTES:
        for what, (headers, message) in bad.items():
            answer = call(gateway.base_url, method, path, body, headers)
            assert answer.status_code == 401, (path, what, answer.text)
            if path.startswith("/v1/messages"):  # Anthropic's error shape on its surface
                assert answer.json() == {
                    "type": "error",
                    "error": {"type": "authentication_error", "message": message},
                }
            else:
                error = answer.json()["error"]
                assert (error["code"], error["message"]) == ("invalid_api_key", message)


def test_a_client_key_cannot_reach_the_admin_api(gateway: Any) -> None:
    client = create_key(gateway.base_url, role="internal")["key"]
    for method, path, body in ADMIN_ROUTES:
        answer = call(gateway.base_url, method, path, body, bearer(client))
        assert answer.status_code == 403, (path, answer.text)
        assert answer.json()["error"]["code"] == "permission_denied"
    status = call(gateway.base_url, "GET", "/v1/models/fast-chat/deployments", None, bearer(client))
    assert status.status_code == 403
    # An admin key made through the API is an admin.
    admin = create_key(gateway.base_url, role="admin")["key"]
    assert httpx.get(gateway.base_url + "/admin/keys", headers=bearer(admin)).status_code == 200


def test_the_admin_api_shows_the_key_once_and_only_prefixes_after(gateway: Any) -> None:
    created = create_key(gateway.base_url, name="billing", role="pro", rpm_limit=5)
    assert created["key"].startswith("ep-")
    assert len(created["key"]) == 3 + 43  # 32 random bytes, URL-safe base64
    assert created["prefix"] == created["key"][:11] + "..."
    listed = httpx.get(gateway.base_url + "/admin/keys", headers=bearer(ADMIN_KEY)).json()
    [row] = [k for k in listed["data"] if k["id"] == created["id"]]
    assert (row["name"], row["role"], row["rpm_limit"], row["revoked"]) == (
        "billing",
        "pro",
        5,
        False,
    )
    one = httpx.get(f"{gateway.base_url}/admin/keys/{created['id']}", headers=bearer(ADMIN_KEY))
    for shown in (listed, one.json()):
        assert created["key"] not in str(shown)
        assert created["key"][11:] not in str(shown)
    missing = httpx.get(
        gateway.base_url + "/admin/keys/ffffffffffffffff", headers=bearer(ADMIN_KEY)
    )
    assert (missing.status_code, missing.json()["error"]["code"]) == (404, "not_found")


@pytest.mark.parametrize(
    ("body", "param"),
    [
        ({}, "name"),
        ({"name": "x", "role": "root"}, "role"),
        ({"name": "x", "rpm_limit": 0}, "rpm_limit"),
        ({"name": "x", "budget_usd": -1}, "budget_usd"),
        ({"name": "x", "expires_at": "yesterday"}, "expires_at"),
        ({"name": "x", "expires_at": "2001-01-01T00:00:00Z"}, "expires_at"),
        ({"name": "x", "colour": "red"}, "colour"),
    ],
)
def test_invalid_key_bodies_are_400_naming_the_field(
    gateway: Any, body: dict[str, Any], param: str
) -> None:
    answer = httpx.post(gateway.base_url + "/admin/keys", json=body, headers=bearer(ADMIN_KEY))
    assert answer.status_code == 400, answer.text
    assert answer.json()["error"]["param"] == param


def test_a_key_sees_and_uses_only_its_models(gateway: Any) -> None:
    key = create_key(gateway.base_url, models=["fast-chat"])["key"]
    models = httpx.get(gateway.base_url + "/v1/models", headers=bearer(key)).json()
    assert [m["id"] for m in models["data"]] == ["fast-chat"]
    assert chat(gateway.base_url, key).status_code == 200
    hidden, absent = chat(gateway.base_url, key, "other-chat"), chat(gateway.base_url, key, "nope")
    assert hidden.status_code == absent.status_code == 404
    # Indistinguishable from a model that does not exist (apart from its name).
    assert (
        hidden.json()["error"]["message"].replace("other-chat", "nope")
        == absent.json()["error"]["message"]
    )
    assert hidden.json()["error"]["code"] == "model_not_found"


def _align_to_minute(clock: FleetClock, margin: float = 10.0) -> None:
    """Move to 1 s into a minute, so that a burst stays inside one minute bucket."""
    into = clock.now() % 60
    if into > 60 - margin or into < 1:
        clock.advance(60 - into + 1)


def test_a_key_over_its_rpm_limit_gets_429_with_the_seconds_to_the_next_minute(
    gateway: Any, clock: FleetClock
) -> None:
    _align_to_minute(clock)
    key = create_key(gateway.base_url, rpm_limit=2)["key"]
    assert [chat(gateway.base_url, key).status_code for _ in range(2)] == [200, 200]
    refused = chat(gateway.base_url, key)
    assert refused.status_code == 429
    assert refused.json()["error"]["code"] == "rate_limit_exceeded"
    expected = 60 - clock.now() % 60
    assert abs(int(refused.headers["retry-after"]) - expected) <= 1.5
    clock.advance(expected + 0.5)  # the next minute: admitted again
    assert chat(gateway.base_url, key).status_code == 200


def test_a_key_over_its_tpm_limit_gets_429_until_the_next_minute(
    gateway: Any, clock: FleetClock
) -> None:
    _align_to_minute(clock, margin=20)
    created = create_key(gateway.base_url, tpm_limit=5)
    assert chat(gateway.base_url, created["key"]).status_code == 200
    wait_for(
        lambda: _usage(gateway, created["id"]), lambda u: u["tokens_this_minute"] >= 5, "tokens"
    )
    refused = chat(gateway.base_url, created["key"])
    assert refused.status_code == 429
    assert int(refused.headers["retry-after"]) >= 1
    clock.advance(60 - clock.now() % 60 + 0.5)
    assert chat(gateway.base_url, created["key"]).status_code == 200


def _usage(gateway: Any, key_id: str) -> dict[str, Any]:
    answer = httpx.get(f"{gateway.base_url}/admin/keys/{key_id}", headers=bearer(ADMIN_KEY))
    usage: dict[str, Any] = answer.json()
    return usage


def test_a_key_over_its_budget_gets_insufficient_quota(gateway: Any) -> None:
    # The mock answers with a few tokens; at 1000 USD per million tokens that is cents.
    created = create_key(gateway.base_url, budget_usd=0.001)
    assert chat(gateway.base_url, created["key"]).status_code == 200
    spent = wait_for(
        lambda: _usage(gateway, created["id"]), lambda u: u["spend_usd"] > 0, "spend recorded"
    )
    assert spent["spend_usd"] >= 0.001
    for surface in ("/v1/chat/completions", "/v1/messages"):
        body = {"model": "fast-chat", "messages": HELLO, "max_tokens": 5}
        refused = httpx.post(gateway.base_url + surface, json=body, headers=bearer(created["key"]))
        assert refused.status_code == 429
        assert refused.headers["x-should-retry"] == "false"  # the SDKs must not retry it
        if surface == "/v1/messages":
            assert refused.json()["error"]["type"] == "rate_limit_error"
        else:
            assert refused.json()["error"]["code"] == "insufficient_quota"
            assert "retry-after" not in refused.headers  # waiting will not help
