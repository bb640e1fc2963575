"""An admin key cannot turn the gateway against itself: egress, credentials, redaction.

The probe of issue 22: a revocable admin key pointed deployments at cloud
metadata, private ranges and loopback, and named any environment variable
of the gateway as the credential; a listener standing in for the
attacker's host received the bootstrap admin key and the AWS secret. Here
every such write is a 400 naming the field, and a stored configuration
that slipped past (written by an older release) still sends neither.
"""

from __future__ import annotations

import asyncio
from typing import Any

import httpx

from edgeproxy.config.loader import parse_config
from edgeproxy_dev.mock_upstream import MockUpstream
from edgeproxy_dev.runner import local_settings, store_config
from tests.fixtures.configs import config, deployment
from tests.integration.admin.helpers import ADMIN_KEY, admin, chat, keys, ok, two_deployments
from tests.unit.config.test_egress import REFUSED

AWS_SECRET = "aws-secret-of-the-function-0123456789"
BOOTSTRAP = "ep-bootstrap-never-upstream-0123456789"
ENV = {
    "AWS_SECRET_ACCESS_KEY": AWS_SECRET,
    "EDGEPROXY_TEST_BOOTSTRAP": BOOTSTRAP,
    "EDGEPROXY_ADMIN_KEY_REF": "env:EDGEPROXY_TEST_BOOTSTRAP",
    "EDGEPROXY_CRED_STOLEN_COPY": AWS_SECRET,
}


def _version(base_url: str) -> int:
    return int(ok(admin(base_url, "GET", "/admin/router-settings"))["version"])


def _send(base_url: str, method: str, path: str, body: dict[str, Any]) -> httpx.Response:
    return admin(base_url, method, path, json=body, headers={"if-match": f'"{_version(base_url)}"'})


def _refused(answer: httpx.Response, param: str) -> str:
    assert answer.status_code == 400, answer.text
    error = answer.json()["error"]
    assert (error["type"], error["param"]) == ("invalid_request_error", param)
    return str(error["message"])


def test_every_hostile_base_url_is_a_400_naming_the_field(
    start_gateway, upstream_a: MockUpstream
) -> None:
    # A gateway that allows nothing (its deployment is never called here).
    public = deployment("a", upstream_a, base_url="https://upstream.invalid/v1")
    gw = start_gateway(config(public, gateway={**keys(), "egress": {"allow": []}}))
    for url in [*REFUSED, "http://localhost:9/v1"]:  # localhost: refused once resolved
        evil = deployment("evil", upstream_a, model="evil", base_url=url)
        message = _refused(_send(gw.base_url, "POST", "/admin/deployments", evil), "base_url")
        assert "deployments[id=evil].base_url" in message
        put = _send(gw.base_url, "PUT", "/admin/deployments/a", {**public, "base_url": url})
        _refused(put, "base_url")
    names = [d["id"] for d in ok(admin(gw.base_url, "GET", "/admin/deployments"))["deployments"]]
    assert names == ["a"]


def test_gateway_secrets_cannot_be_named_and_a_stored_credential_cannot_be_redirected(
    start_gateway, upstream_a: MockUpstream, upstream_b: MockUpstream, make_upstream
) -> None:
    gw = start_gateway(two_deployments(upstream_a, upstream_b), env=ENV)
    base = gw.base_url
    listener = make_upstream("attacker")
    # 127.1 on a gateway that allows loopback: a clean 400 at the write, not a 500 per request.
    odd = deployment("odd", upstream_a, model="odd", base_url="http://127.1:9/v1")
    assert "non-standard" in _refused(_send(base, "POST", "/admin/deployments", odd), "base_url")
    for credential in (
        "env:EDGEPROXY_TEST_BOOTSTRAP",
        "env:AWS_SECRET_ACCESS_KEY",
        "env:AWS_SESSION_TOKEN",
        "ssm:/somewhere-else/key",
    ):
        evil = deployment("evil", listener, model="evil", credential=credential)
        _refused(_send(base, "POST", "/admin/deployments", evil), "credential")
    # A PATCH that moves a's base_url to the listener must restate a's credential.
    message = _refused(
        _send(base, "PATCH", "/admin/deployments/a", {"base_url": listener.base_url}), "credential"
    )
    assert "restating credential" in message
    moved = {"base_url": listener.base_url, "credential": "env:EDGEPROXY_CRED_MOCK_KEY"}
    assert ok(_send(base, "PATCH", "/admin/deployments/a", moved))["base_url"] == listener.base_url
    # A copy of the AWS secret under the prefix passes the name rule, never the value rule.
    copy = deployment("copy", listener, model="copy", credential="env:EDGEPROXY_CRED_STOLEN_COPY")
    ok(_send(base, "POST", "/admin/deployments", copy), 201)
    assert chat(base, "copy").status_code >= 500
    seen = [r["headers"].get("authorization", "") for r in listener.requests()]
    assert not any(AWS_SECRET in value or BOOTSTRAP in value for value in seen)


def test_a_stored_configuration_from_before_the_rules_still_sends_no_gateway_secret(
    dynamo_endpoint: str, gateway_table: str, start_gateway, make_upstream, upstream_b, clock
) -> None:
    listener = make_upstream("attacker")
    old = config(
        deployment("boot", listener, model="boot", credential="env:EDGEPROXY_TEST_BOOTSTRAP"),
        deployment("aws", listener, model="aws", credential="env:AWS_SECRET_ACCESS_KEY"),
        deployment("b", upstream_b),
        gateway=keys(),  # loopback allowed: only the resolver's own check stands in the way
    )
    gw = start_gateway(two_deployments(upstream_b, upstream_b), env=ENV)
    stored = parse_config(old, "an older release's document", entry=False)
    asyncio.run(store_config(local_settings(dynamo_endpoint, gateway_table), stored))
    clock.advance(1)  # past the configuration cache's TTL
    for model in ("boot", "aws"):
        answer = chat(gw.base_url, model)
        assert answer.status_code in (500, 502, 503), answer.text
        assert answer.headers["content-type"].startswith("application/json")
    assert chat(gw.base_url).status_code == 200  # the rest of the document serves
    assert listener.requests() == []  # neither key was ever sent


def test_header_values_never_leave_in_reads_writes_or_the_audit_log(
    start_gateway, upstream_a: MockUpstream, upstream_b: MockUpstream
) -> None:
    secret = "org-secret-header-value-0123456789"
    cfg = two_deployments(upstream_a, upstream_b)
    gw = start_gateway(cfg)
    base = gw.base_url
    new = deployment("h", upstream_a, model="h", headers={"x-org": secret}, query={"k": secret})
    created = ok(_send(base, "POST", "/admin/deployments", new), 201)
    assert created["headers"] == {"x-org": "[redacted]"}
    assert created["query"] == {"k": "[redacted]"}
    one = ok(admin(base, "GET", "/admin/deployments/h"))
    del one["version"]  # sent in If-Match instead
    listed = ok(admin(base, "GET", "/admin/deployments"))
    # Read, modify, write back: the redacted values stand for the stored ones.
    ok(_send(base, "PUT", "/admin/deployments/h", {**one, "weight": 2}))
    assert chat(base, "h").status_code == 200
    assert upstream_a.requests()[-1]["headers"]["x-org"] == secret
    changed = {"headers": {"x-org": secret + "-2"}}
    ok(_send(base, "PATCH", "/admin/deployments/h", changed))
    # Moving base_url with the redacted placeholder is refused: the value must be restated.
    moved = {**one, "base_url": upstream_b.base_url, "credential": "env:EDGEPROXY_CRED_MOCK_KEY"}
    _refused(_send(base, "PUT", "/admin/deployments/h", moved), "headers")
    audit = admin(base, "GET", "/admin/audit")
    text = audit.text + repr(one) + repr(listed)
    assert audit.status_code == 200
    assert secret not in text
    entries = audit.json()["data"]
    header_changes = [c for e in entries for c in e["changes"] if "headers" in c.get("path", "")]
    assert header_changes  # the change is recorded, as a change
    assert all(c.get("new") in ("[redacted]", {"x-org": "[redacted]"}) for c in header_changes)
    assert ADMIN_KEY not in audit.text
