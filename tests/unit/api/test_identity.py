"""Who is calling: keys, admin rights, and which IP counts as the caller's."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from mangum.handlers.api_gateway import HTTPGateway
from starlette.requests import Request

from edgeproxy.api.identity import client_ip, identify
from edgeproxy.config.models import ApiKey, GatewaySettings
from edgeproxy.errors import AuthenticationError

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


def test_keys_are_checked_by_hash_and_admins_recognised() -> None:
    def key(name: str, secret: str, admin: bool = False) -> ApiKey:
        return ApiKey(name=name, sha256=hashlib.sha256(secret.encode()).hexdigest(), admin=admin)

    settings = GatewaySettings(api_keys=[key("ops", "sk-admin", True), key("app", "sk-app")])
    assert identify(request(authorization="Bearer sk-admin"), settings, False).admin is True
    app = identify(request(x_api_key="sk-app"), settings, False)
    # Only the key's digest travels on, as the caller's affinity id.
    assert (app.admin, app.caller) == (False, "key:" + hashlib.sha256(b"sk-app").hexdigest())
    with pytest.raises(AuthenticationError):
        identify(request(authorization="Bearer sk-wrong"), settings, False)
    with pytest.raises(AuthenticationError):
        identify(request(), settings, False)
    # No keys configured: anyone may call (IAM guards the deployed API), nobody is admin.
    anyone = identify(request(authorization="Bearer x"), GatewaySettings(), False)
    assert anyone.admin is False
    assert anyone.caller == "key:" + hashlib.sha256(b"x").hexdigest()
    grant = identify(request(x_grant_id="g-1"), GatewaySettings(), False)
    assert grant.caller == "grant:g-1"
    assert identify(request(), GatewaySettings(), False).caller == "ip:198.51.100.9"
