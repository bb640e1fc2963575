"""A hostile budget-alert webhook in a configuration write is a 400 naming the field."""

from __future__ import annotations

from typing import Any

from edgeproxy_dev.mock_upstream import MockUpstream
from tests.fixtures.configs import config, deployment
from tests.integration.admin.helpers import admin, keys, ok

SECRET_REF = "env:EDGEPROXY_CRED_ALERT_HOOK"


def test_hostile_webhook_urls_are_refused_and_nothing_is_stored(
    start_gateway, upstream_a: MockUpstream
) -> None:
    gw = start_gateway(config(deployment("a", upstream_a), gateway=keys()))
    stored: dict[str, Any] = ok(admin(gw.base_url, "GET", "/admin/config"))
    hostile = [
        ("https://10.1.2.3/hook", "egress"),
        ("https://169.254.169.254/latest/meta-data", "egress"),
        ("http://hooks.example.com/hook", "https"),
        ("https://hooks.example.com/a\r\nx-forged: 1", "control"),
    ]
    for url, words in hostile:
        document = dict(stored["document"])
        gateway = dict(document.get("gateway", {}))
        gateway["alerts"] = {"webhook_url": url, "webhook_secret_ref": SECRET_REF}
        document["gateway"] = gateway
        answer = admin(gw.base_url, "PUT", "/admin/config", json={"document": document})
        assert answer.status_code == 400, answer.text
        message = answer.json()["error"]["message"]
        assert "webhook_url" in message, message
        assert words in message, message
    after = ok(admin(gw.base_url, "GET", "/admin/config"))
    assert "alerts" not in after["document"].get("gateway", {})
