"""Who is calling: keys (bootstrap, YAML, table), roles, and which IP counts as the caller's."""

from __future__ import annotations

import asyncio
import hashlib
import json
from pathlib import Path
from typing import Any

import pytest
from mangum.handlers.api_gateway import HTTPGateway
from starlette.requests import Request

from edgeproxy.api.admin.keys import ROUTES
from edgeproxy.api.admin.routes import admin_routes, openapi_document
from edgeproxy.api.identity import Identity, admit, client_ip, identify
from edgeproxy.config.models import ApiKey, GatewayConfig, GatewaySettings
from edgeproxy.config.roles import Role
from edgeproxy.errors import AuthenticationError, ModelNotFound, RateLimited
from edgeproxy.routing.access import ClientKey
from edgeproxy.service.credentials import CredentialResolver
from edgeproxy.service.keys import KeyRing
from edgeproxy.settings import Settings

EVENTS = Path(__file__).resolve().parents[3] / "events"


def request(client: str = "198.51.100.9", **headers: str) -> Request:
    raw = [(k.replace("_", "-").encode(), v.encode()) for k, v in headers.items()]
    return Request({"type": "http", "headers": raw, "client": (client, 0)})


def test_forwarded_for_counts_only_behind_a_trusted_proxy() -> None:
    spoofed = request(x_forwarded_for="203.0.113.1, 10.0.0.1")
    assert client_ip(spoofed, trust_forwarded_for=False) == "198.51.100.9"
    assert client_ip(spoofed, trust_forwarded_for=True) == "203.0.113.1"


def test_under_mangum_the_ip_is_api_gateways_source_ip() -> None:
    event = json.loads((EVENTS / "chat.json").read_text())
    event["headers"]["x-forwarded-for"] = "192.0.2.66"  # what a client could claim
    scope = HTTPGateway(event, None, {"api_gateway_base_path": "/", "exclude_headers": []}).scope
    assert scope["client"][0] == event["requestContext"]["http"]["sourceIp"] == "203.0.113.7"


class Keys:
    """An in-memory ``KeyStore`` (the Dynamo one has its own contract tests)."""

    def __init__(self, *keys: ClientKey) -> None:
        self.keys = {k.digest: k for k in keys}
        self.reads = 0

    async def get_client_key(self, digest: str) -> ClientKey | None:
        self.reads += 1
        return self.keys.get(digest)

    async def admit_key(self, key_id: str, minute: int, rpm_limit: int, expires_at: float) -> bool:
        return False

    async def record_key_usage(self, *args: object) -> None:
        return None

    async def touch_client_key(self, digest: str, now: float) -> None:
        return None


def digest(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def ring(store: Keys, now: float = 1000.0, **kwargs: Any) -> KeyRing:
    return KeyRing(store, lambda: now, **kwargs)


def config(*keys: ApiKey) -> GatewayConfig:
    return GatewayConfig(gateway=GatewaySettings(api_keys=list(keys)))


def who(keys: KeyRing, cfg: GatewayConfig | None = None, **headers: str) -> Identity:
    return asyncio.run(identify(request(**headers), cfg or config(), keys, False))


def refused(keys: KeyRing, cfg: GatewayConfig | None = None, **headers: str) -> str:
    with pytest.raises(AuthenticationError) as caught:
        who(keys, cfg, **headers)
    assert caught.value.status == 401
    return caught.value.message


def test_yaml_keys_are_checked_by_hash_and_an_admin_entry_is_no_key() -> None:
    def key(name: str, secret: str, admin: bool = False) -> ApiKey:
        return ApiKey(name=name, sha256=digest(secret), admin=admin)

    cfg = config(key("ops", "sk-admin", True), key("app", "sk-app"))
    keys = ring(Keys())
    # Admin keys are table keys only: a YAML admin entry (a document stored before the owner
    # imported it, or planted) is not a key at all, so it cannot reach the admin API unlisted.
    assert refused(keys, cfg, authorization="Bearer sk-admin") == "Incorrect API key provided."
    imported = ClientKey(digest("sk-admin"), "ops", Role.ADMIN)
    assert who(ring(Keys(imported)), cfg, authorization="Bearer sk-admin").admin is True
    app = who(keys, cfg, x_api_key="sk-app")
    # Only the key's digest travels on, as the caller's affinity id.
    assert (app.admin, app.role, app.caller) == (False, Role.FREE, "key:" + digest("sk-app"))
    assert refused(keys, cfg, authorization="Bearer sk-wrong") == "Incorrect API key provided."
    assert refused(keys, cfg) == "You didn't provide an API key."


def test_table_keys_carry_their_role_and_refuse_revoked_and_expired() -> None:
    pro = ClientKey(digest("ep-pro"), "pro-app", Role.PRO)
    admin = ClientKey(digest("ep-admin"), "ops", Role.ADMIN)
    gone = ClientKey(digest("ep-gone"), "old", revoked=True)
    late = ClientKey(digest("ep-late"), "late", expires_at=1000.0)
    keys = ring(Keys(pro, admin, gone, late), now=1000.0)
    seen = who(keys, authorization="Bearer ep-pro")
    assert (seen.role, seen.admin, seen.key, seen.name) == (Role.PRO, False, pro, "pro-app")
    assert who(keys, x_api_key="ep-admin").admin is True
    assert refused(keys, authorization="Bearer ep-gone") == "This API key has been revoked."
    assert refused(keys, authorization="Bearer ep-late") == "This API key has expired."
    assert refused(keys, authorization="Bearer " + "x" * 300) == "Malformed API key."
    assert refused(keys, authorization="Basic ep-pro") == "You didn't provide an API key."


def test_the_bootstrap_admin_key_comes_from_a_credential_reference() -> None:
    credentials = CredentialResolver({"ADMIN": "ep-bootstrap"})
    keys = ring(Keys(), admin_key_ref="env:ADMIN", credentials=credentials)
    boot = who(keys, authorization="Bearer ep-bootstrap")
    assert (boot.admin, boot.role, boot.key) == (True, Role.ADMIN, None)
    refused(keys, authorization="Bearer ep-other")
    # An unresolvable reference disables the bootstrap key; it never opens the gateway.
    broken = ring(Keys(), admin_key_ref="env:UNSET", credentials=CredentialResolver({}))
    refused(broken, authorization="Bearer ep-bootstrap")


def test_lookups_are_cached_for_the_ttl_unknown_keys_too() -> None:
    store = Keys()
    now = [0.0]
    keys = KeyRing(store, lambda: now[0], ttl_seconds=10)
    for _ in range(3):
        refused(keys, authorization="Bearer ep-nope")
    assert store.reads == 1
    store.keys[digest("ep-nope")] = ClientKey(digest("ep-nope"), "late-created")
    now[0] = 10.0  # the TTL passed: the next request reads again and sees the new key
    assert who(keys, authorization="Bearer ep-nope").name == "late-created"
    assert store.reads == 2


def test_without_auth_keyless_callers_are_anonymous_free_callers() -> None:
    keys = ring(Keys(), auth_off=True)
    anyone = who(keys)
    assert (anyone.anonymous, anyone.admin, anyone.role) == (True, False, Role.FREE)
    assert anyone.caller == "ip:198.51.100.9"
    assert who(keys, x_grant_id="g-1").caller == "grant:g-1"
    # An unknown key only names the caller; a revoked one stays refused.
    unknown = who(keys, authorization="Bearer ep-unknown")
    assert (unknown.anonymous, unknown.caller) == (True, "key:" + digest("ep-unknown"))
    keys = ring(Keys(ClientKey(digest("ep-gone"), "old", revoked=True)), auth_off=True)
    refused(keys, authorization="Bearer ep-gone")


def test_auth_can_be_switched_off_only_off_lambda() -> None:
    assert Settings.from_env({"EDGEPROXY_AUTH": "off"}).auth_off is True
    assert Settings.from_env({}).auth_off is False
    on_lambda = {"EDGEPROXY_AUTH": "off", "AWS_LAMBDA_FUNCTION_NAME": "edgeproxy-proxy"}
    assert Settings.from_env(on_lambda).auth_off is False


def test_a_key_over_its_rpm_limit_gets_429_until_the_next_minute() -> None:
    limited = ClientKey(digest("ep-lim"), "lim", rpm_limit=5)
    keys = ring(Keys(limited), now=6055.5)  # 4.5 s before the next minute bucket
    with pytest.raises(RateLimited) as caught:
        asyncio.run(admit(Identity("key:x", False, key=limited), "fast-chat", keys))
    assert caught.value.retry_after == pytest.approx(4.5)


def test_a_model_the_key_may_not_use_is_not_found() -> None:
    scoped = ClientKey(digest("ep-s"), "s", models=frozenset({"fast-chat"}))
    keys = ring(Keys(scoped))
    caller = Identity("key:x", False, key=scoped)
    asyncio.run(admit(caller, "fast-chat:eu", keys))  # a group of an allowed model
    with pytest.raises(ModelNotFound) as caught:
        asyncio.run(admit(caller, "gpt-4o", keys))
    assert caught.value.code == "model_not_found"


def test_the_admin_openapi_document_describes_every_key_route() -> None:
    document = openapi_document(admin_routes())
    paths = document["paths"]
    assert {route.path for route in ROUTES} <= set(paths)
    assert set(paths["/admin/keys/{key_id}"]) == {"get", "delete", "patch"}
    assert set(paths["/admin/keys/{key_id}/rotate"]) == {"post"}
    ids = [op["operationId"] for path in paths.values() for op in path.values()]
    assert len(ids) == len(set(ids))
    body = paths["/admin/keys"]["post"]["requestBody"]["content"]["application/json"]["schema"]
    (ref,) = body["allOf"]
    schema = document["components"]["schemas"][ref["$ref"].rsplit("/", 1)[1]]
    assert schema["required"] == ["name"]
    assert set(schema["properties"]) >= {"name", "role", "models", "rpm_limit", "budget_usd"}
