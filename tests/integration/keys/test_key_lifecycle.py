"""A client key's lifecycle through the admin API, seen by a stock openai SDK caller.

Update (limits, models, role, expiry; conditional, audited), rotation with
a grace period, budget periods that reset at UTC boundaries (the test's
clock is moved across them), listings with limits and spend, unknown
models refused, revocation idempotent.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import openai
import pytest

from edgeproxy_dev.mock_upstream import MockUpstream
from tests.fixtures.clock import FleetClock
from tests.fixtures.configs import config, deployment
from tests.fixtures.secrets import remember
from tests.fixtures.table import wait_for
from tests.integration.keys.helpers import ADMIN_KEY, ENV, HELLO, bearer, create_key, revoke_key

PRICE = 1_000_000.0  # $1 a token: one mock answer costs a few dollars


@pytest.fixture
def gateway(start_gateway: Callable[..., Any], upstream_a: MockUpstream) -> Any:
    cfg = config(
        deployment("a", upstream_a, input_price_per_mtok=PRICE, output_price_per_mtok=PRICE),
        deployment("other", upstream_a, model="other-chat"),
        deployment("grouped", upstream_a, model="team-chat:eu"),
    )
    return start_gateway(cfg, env=ENV)


def sdk(gw: Any, key: str) -> openai.OpenAI:
    return openai.OpenAI(base_url=gw.base_url + "/v1", api_key=key, max_retries=0)


def ask(gw: Any, key: str, model: str = "fast-chat") -> str:
    with sdk(gw, key) as client:
        answer = client.chat.completions.create(model=model, messages=HELLO, max_tokens=5)  # type: ignore[arg-type]
    return answer.choices[0].message.content or ""


def admin(gw: Any, method: str, path: str, body: Any = None, **headers: str) -> httpx.Response:
    return httpx.request(
        method,
        gw.base_url + path,
        json=body,
        headers={**bearer(ADMIN_KEY), **headers},
        timeout=10,
    )


def audit_for(gw: Any, key_id: str) -> list[dict[str, Any]]:
    entries = admin(gw, "GET", "/admin/audit?limit=500").json()["data"]
    return [e for e in entries if e["target"] == f"key:{key_id}"]


def spend(gw: Any, key_id: str, done: Callable[[float], bool]) -> float:
    """The key's spend this period, once ``done`` holds (answers are counted after they end)."""
    return wait_for(
        lambda: float(admin(gw, "GET", f"/admin/keys/{key_id}").json()["spend_usd"]), done, "spend"
    )


def start_of_minute(clock: FleetClock) -> None:
    into = clock.now() % 60
    if into > 40:  # the per-minute checks below stay inside one minute
        clock.advance(60 - into + 1)


def test_an_update_changes_limits_models_role_and_expiry_validated_and_audited(
    gateway: Any, clock: FleetClock
) -> None:
    start_of_minute(clock)
    created = create_key(gateway.base_url, name="app", models=["fast-chat"], rpm_limit=5)
    key, key_id = created["key"], created["id"]
    with pytest.raises(openai.NotFoundError):
        ask(gateway, key, "other-chat")

    expires = (datetime.now(UTC) + timedelta(days=30)).replace(microsecond=0)
    answer = admin(
        gateway,
        "PATCH",
        f"/admin/keys/{key_id}",
        {
            "models": ["fast-chat", "other-chat"],
            "rpm_limit": 1,
            "role": "pro",
            "expires_at": expires.isoformat(),
            "budget_usd": 50,
            "budget_period": "daily",
        },
    )
    assert answer.status_code == 200, answer.text
    view = answer.json()
    assert (view["id"], view["models"], view["rpm_limit"], view["role"]) == (
        key_id,
        ["fast-chat", "other-chat"],
        1,
        "pro",
    )
    assert (view["budget_usd"], view["budget_period"], view["version"]) == (50.0, "daily", 1)
    assert view["expires_at"] == expires.isoformat().replace("+00:00", "Z")
    assert "key" not in view
    # This process forgot its cached key: the new models and rpm limit apply at once.
    assert ask(gateway, key, "other-chat")
    with pytest.raises(openai.RateLimitError):
        ask(gateway, key)

    # null removes a limit; a stale If-Match is refused, a current one applies.
    stale = admin(
        gateway, "PATCH", f"/admin/keys/{key_id}", {"rpm_limit": None}, **{"if-match": '"0"'}
    )
    assert stale.status_code == 409
    assert stale.json()["error"]["code"] == "version_conflict"
    current = admin(gateway, "PATCH", f"/admin/keys/{key_id}", {"rpm_limit": None, "version": 1})
    assert (current.status_code, current.json()["rpm_limit"], current.json()["version"]) == (
        200,
        None,
        2,
    )
    assert ask(gateway, key)  # no rpm limit any more

    # Validated like a creation: an unknown model, a past expiry, a bad field: 400, unchanged.
    for body, param in [
        ({"models": ["fast-chat", "gpt-7"]}, "models"),
        ({"expires_at": "2001-01-01T00:00:00Z"}, "expires_at"),
        ({"rpm_limit": 0}, "rpm_limit"),
        ({"budget_period": "hourly"}, "budget_period"),
        ({"role": None}, "role"),
    ]:
        refused = admin(gateway, "PATCH", f"/admin/keys/{key_id}", body)
        assert refused.status_code == 400, (body, refused.text)
        assert refused.json()["error"]["param"] == param
    assert (
        "gpt-7"
        in admin(gateway, "PATCH", f"/admin/keys/{key_id}", {"models": ["gpt-7"]}).json()["error"][
            "message"
        ]
    )
    assert admin(gateway, "GET", f"/admin/keys/{key_id}").json()["version"] == 2
    missing = admin(gateway, "PATCH", "/admin/keys/0000000000000000", {"rpm_limit": 3})
    assert missing.status_code == 404

    entries = audit_for(gateway, key_id)
    assert [e["action"] for e in entries] == ["key.update", "key.update", "key.create"]
    changed = {c["path"]: c for c in entries[1]["changes"]}
    assert changed["rpm_limit"] == {"path": "rpm_limit", "old": 5, "new": 1}
    assert changed["models"]["new"] == ["fast-chat", "other-chat"]
    assert key not in json.dumps(entries)


def test_models_the_configuration_does_not_serve_are_refused_at_creation(gateway: Any) -> None:
    answer = admin(gateway, "POST", "/admin/keys", {"name": "x", "models": ["fast-chat", "gpt-7"]})
    assert answer.status_code == 400
    error = answer.json()["error"]
    assert (error["type"], error["param"], error["code"]) == (
        "invalid_request_error",
        "models",
        "model_not_found",
    )
    assert "`gpt-7`" in error["message"]
    assert not [k for k in admin(gateway, "GET", "/admin/keys").json()["data"] if k["name"] == "x"]
    # A model with groups is served by its base name and by each group.
    grouped = create_key(gateway.base_url, name="g", models=["team-chat", "team-chat:eu"])
    assert grouped["models"] == ["team-chat", "team-chat:eu"]


def test_revoking_twice_answers_the_same_and_audits_once(gateway: Any) -> None:
    created = create_key(gateway.base_url, name="twice")
    first = revoke_key(gateway.base_url, created["id"])
    again = revoke_key(gateway.base_url, created["id"])
    deleted = admin(gateway, "DELETE", f"/admin/keys/{created['id']}")
    assert first.status_code == again.status_code == deleted.status_code == 200
    assert first.json() == again.json() == deleted.json()
    assert first.json()["status"] == "revoked"
    assert [e["action"] for e in audit_for(gateway, created["id"])] == ["key.revoke", "key.create"]
    with pytest.raises(openai.AuthenticationError):
        ask(gateway, created["key"])


def test_a_rotation_keeps_the_id_limits_and_spend_and_the_old_secret_for_its_grace(
    gateway: Any, clock: FleetClock
) -> None:
    created = create_key(gateway.base_url, name="rotating", budget_usd=1000, rpm_limit=100)
    old, key_id = created["key"], created["id"]
    assert ask(gateway, old)
    spent = spend(gateway, key_id, lambda s: s > 0)

    answer = admin(gateway, "POST", f"/admin/keys/{key_id}/rotate", {"grace_seconds": 3600})
    assert answer.status_code == 200, answer.text
    rotated = answer.json()
    new = remember(rotated["key"])
    assert new != old
    assert new.startswith("ep-")
    assert (rotated["id"], rotated["status"], rotated["grace_seconds"]) == (
        key_id,
        "rotating",
        3600,
    )
    assert rotated["prefix"] == new[:11] + "..." != created["prefix"]
    assert (rotated["budget_usd"], rotated["rpm_limit"]) == (1000.0, 100)
    # Both secrets work during the grace period, against the same limits and spend.
    assert ask(gateway, new)
    assert ask(gateway, old)
    spend(gateway, key_id, lambda s: s > spent)
    assert admin(gateway, "GET", f"/admin/keys/{key_id}").json()["status"] == "rotating"

    clock.advance(3601)
    with pytest.raises(openai.AuthenticationError) as refused:
        ask(gateway, old)
    assert "rotated" in str(refused.value)
    assert ask(gateway, new)
    assert admin(gateway, "GET", f"/admin/keys/{key_id}").json()["status"] == "active"

    # grace 0: the previous secret is refused at once; the listing keeps one entry.
    newest = remember(
        admin(gateway, "POST", f"/admin/keys/{key_id}/rotate", {"grace_seconds": 0}).json()["key"]
    )
    with pytest.raises(openai.AuthenticationError):
        ask(gateway, new)
    assert ask(gateway, newest)
    listed = [k for k in admin(gateway, "GET", "/admin/keys").json()["data"] if k["id"] == key_id]
    assert len(listed) == 1
    entries = audit_for(gateway, key_id)
    assert [e["action"] for e in entries] == ["key.rotate", "key.rotate", "key.create"]
    dumped = json.dumps(entries)
    assert all(secret not in dumped for secret in (old, new, newest))
    # A revoked key cannot be rotated, and all of its secrets are refused.
    revoke_key(gateway.base_url, key_id)
    refused_rotation = admin(gateway, "POST", f"/admin/keys/{key_id}/rotate")
    assert refused_rotation.status_code == 400
    assert "revoked" in refused_rotation.json()["error"]["message"]
    with pytest.raises(openai.AuthenticationError):
        ask(gateway, newest)


def test_a_rotated_key_keeps_its_sticky_bindings(
    start_gateway: Callable[..., Any],
    upstream_a: MockUpstream,
    upstream_b: MockUpstream,
    table: Any,
) -> None:
    cfg = config(deployment("a", upstream_a), deployment("b", upstream_b))
    gw = start_gateway(cfg, env=ENV)
    created = create_key(gw.base_url, name="sticky")
    with sdk(gw, created["key"]) as client:
        first = client.chat.completions.with_raw_response.create(model="fast-chat", messages=HELLO)  # type: ignore[arg-type]
    served = first.headers["x-edgeproxy-deployment"]
    digest = hashlib.sha256(created["key"].encode()).hexdigest()
    table.wait_binding(f"key:{digest}", served)
    new = remember(admin(gw, "POST", f"/admin/keys/{created['id']}/rotate").json()["key"])
    with sdk(gw, new) as client:
        for _ in range(4):
            again = client.chat.completions.with_raw_response.create(
                model="fast-chat", messages=HELLO
            )  # type: ignore[arg-type]
            assert again.headers["x-edgeproxy-deployment"] == served
    new_digest = hashlib.sha256(new.encode()).hexdigest()
    assert table.binding(f"key:{new_digest}") is None  # no second identity


def _midnight_after(now: float) -> float:
    day = datetime.fromtimestamp(now, UTC).replace(hour=0, minute=0, second=0, microsecond=0)
    return (day + timedelta(days=1)).timestamp()


def test_a_daily_budget_resets_at_utc_midnight_and_a_total_one_never(
    gateway: Any, clock: FleetClock
) -> None:
    clock.advance(_midnight_after(clock.now()) - 120 - clock.now())  # 23:58 UTC
    daily = create_key(gateway.base_url, name="daily", budget_usd=1, budget_period="daily")
    total = create_key(gateway.base_url, name="total", budget_usd=1)
    refusals = {}
    for created in (daily, total):
        assert ask(gateway, created["key"])  # the first request of a budget is served
        spend(gateway, created["id"], lambda s: s >= 1)
        with pytest.raises(openai.RateLimitError) as spent:
            ask(gateway, created["key"])
        assert spent.value.code == "insufficient_quota"
        refusals[created["name"]] = str(spent.value)
    reset = datetime.fromtimestamp(_midnight_after(clock.now()), UTC)
    assert (
        f"daily budget; it resets at {reset.isoformat().replace('+00:00', 'Z')}"
        in (refusals["daily"])
    )
    assert "whole budget" in refusals["total"]
    before = spend(gateway, total["id"], lambda s: s >= 1)

    clock.advance(180)  # 00:01 UTC the next day: a new period, no job ran
    listed = {k["name"]: k for k in admin(gateway, "GET", "/admin/keys").json()["data"]}
    assert (listed["daily"]["spend_usd"], listed["total"]["spend_usd"]) == (0.0, before)
    assert listed["daily"]["period_resets_at"] == (reset + timedelta(days=1)).isoformat().replace(
        "+00:00", "Z"
    )
    assert listed["total"]["period_resets_at"] is None
    assert ask(gateway, daily["key"])
    with pytest.raises(openai.RateLimitError) as still:
        ask(gateway, total["key"])
    assert "whole budget" in str(still.value)
    spend(gateway, daily["id"], lambda s: s >= 1)


def test_the_listing_shows_limits_spend_expiry_and_status(gateway: Any, clock: FleetClock) -> None:
    soon = clock.now() + 60
    create_key(
        gateway.base_url,
        name="limited",
        rpm_limit=7,
        tpm_limit=700,
        budget_usd=9,
        budget_period="monthly",
    )
    expiring = create_key(gateway.base_url, name="expiring", expires_at=soon)
    revoked = create_key(gateway.base_url, name="revoked")
    rotating = create_key(gateway.base_url, name="rotating")
    revoke_key(gateway.base_url, revoked["id"])
    remember(admin(gateway, "POST", f"/admin/keys/{rotating['id']}/rotate").json()["key"])
    assert ask(gateway, expiring["key"])
    clock.advance(61)

    def listing() -> dict[str, Any]:
        return {k["name"]: k for k in admin(gateway, "GET", "/admin/keys").json()["data"]}

    # The answer's spend is counted after it was sent (a coalesced write): wait for it.
    listed = wait_for(listing, lambda keys: keys["expiring"]["spend_usd"] > 0, "spend counted")
    assert {n: k["status"] for n, k in listed.items()} == {
        "limited": "active",
        "expiring": "expired",
        "revoked": "revoked",
        "rotating": "rotating",
    }
    limited = listed["limited"]
    assert (limited["rpm_limit"], limited["tpm_limit"], limited["budget_usd"]) == (7, 700, 9.0)
    assert (limited["budget_period"], limited["spend_usd"]) == ("monthly", 0.0)
    assert listed["expiring"]["spend_usd"] > 0
    assert listed["expiring"]["expires_at"] is not None
