"""Sticky operations over HTTP: unbind a caller, invalidate a pool, binding share vs weight."""

from __future__ import annotations

import hashlib

from edgeproxy_dev.mock_upstream import MockUpstream
from tests.fixtures.table import TableView
from tests.integration.admin.helpers import CLIENT_KEY, admin, chat, ok, two_deployments

CALLER = "key:" + hashlib.sha256(CLIENT_KEY.encode()).hexdigest()


def test_unbind_invalidate_and_share(
    start_gateway, table: TableView, upstream_a: MockUpstream, upstream_b: MockUpstream
) -> None:
    gw = start_gateway(two_deployments(upstream_a, upstream_b))
    base = gw.base_url
    assert chat(base).status_code == 200
    table.wait_binding(CALLER, "a")

    removed = ok(
        admin(
            base,
            "POST",
            "/admin/bindings/unbind",
            json={"pool": "fast-chat", "api_key": CLIENT_KEY},
        )
    )

    assert removed == {
        "pool": "fast-chat",
        "caller": CALLER,
        "removed": [{"protocol": "openai.chat", "deployment": "a"}],
    }
    table.wait_unbound(CALLER)
    again = ok(
        admin(base, "POST", "/admin/bindings/unbind", json={"pool": "fast-chat", "caller": CALLER})
    )
    assert again["removed"] == []
    assert CLIENT_KEY not in str(ok(admin(base, "GET", "/admin/audit")))

    generation = ok(admin(base, "POST", "/admin/bindings/invalidate", json={"pool": "fast-chat"}))
    assert generation == {"pool": "fast-chat", "generation": 1}

    share = ok(admin(base, "GET", "/admin/bindings/share?pool=fast-chat&minutes=5"))
    assert share["pool"] == "fast-chat"
    assert [d["deployment_id"] for d in share["deployments"]] == ["a", "b"]
    actions = [e["action"] for e in ok(admin(base, "GET", "/admin/audit?limit=3"))["data"]]
    assert actions == ["binding.invalidate", "binding.unbind", "binding.unbind"]


def test_binding_requests_are_checked(
    start_gateway, upstream_a: MockUpstream, upstream_b: MockUpstream
) -> None:
    gw = start_gateway(two_deployments(upstream_a, upstream_b))
    base = gw.base_url
    for path, body, status in (
        ("unbind", {"pool": "nope", "caller": CALLER}, 404),
        ("unbind", {"pool": "fast-chat"}, 400),
        ("unbind", {"pool": "fast-chat", "caller": "sk-raw-key"}, 400),
        ("unbind", {"pool": "fast-chat", "caller": CALLER, "api_key": "x"}, 400),
        ("unbind", {"pool": "fast-chat", "caller": CALLER, "protocol": "smtp"}, 400),
        ("invalidate", {"pool": "nope"}, 404),
        ("invalidate", {}, 400),
    ):
        answer = admin(base, "POST", f"/admin/bindings/{path}", json=body)
        assert answer.status_code == status, (path, body, answer.text)
    assert admin(base, "GET", "/admin/bindings/share?pool=nope").status_code == 404
    assert admin(base, "GET", "/admin/bindings/share").status_code == 400
    assert admin(base, "GET", "/admin/bindings/share?pool=fast-chat&minutes=0").status_code == 400
