"""``POST /admin/route/explain`` across two gateway processes on one table.

State is written through one process (a forced-open circuit, a sticky
binding, an rpm count) and explained through the other, which reads it from
the shared store like its router would. Explaining calls no upstream and
writes nothing: the mocks see no request and the table is unchanged.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
from typing import Any

import httpx
import pytest

from edgeproxy.cli import main
from edgeproxy_dev.mock_upstream import MockUpstream
from tests.fixtures.table import TableView
from tests.integration.admin.helpers import ADMIN_KEY, CLIENT_KEY, admin, chat, ok, two_deployments

CALLER = "key:" + hashlib.sha256(CLIENT_KEY.encode()).hexdigest()
BODY = {"model": "fast-chat", "messages": [{"role": "user", "content": "hi"}]}


def _explain(base_url: str, **order: Any) -> dict[str, Any]:
    payload = {"path": "/v1/chat/completions", "body": BODY, "caller": CALLER, **order}
    return ok(admin(base_url, "POST", "/admin/route/explain", json=payload))


def _by_id(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {c["deployment"]: c for c in report["candidates"]}


def _state(table: TableView) -> list[Any]:
    """Every item but the request log's: the earlier chats' records and aggregates are
    flushed in the background (a window later) and may land after the first scan."""
    return [i for i in table.scan() if not i["pk"]["S"].startswith(("log#", "usage#"))]


def _calls(*upstreams: MockUpstream) -> int:
    return sum(len(u.requests()) for u in upstreams)


def test_a_circuit_opened_through_one_process_is_explained_by_the_other(
    start_gateway,
    spawn_gateway,
    table: TableView,
    upstream_a: MockUpstream,
    upstream_b: MockUpstream,
) -> None:
    gw = start_gateway(
        two_deployments(upstream_a, upstream_b, router={"sticky": {"enabled": False}})
    )
    other = spawn_gateway(None)
    before = _explain(other.base_url)
    assert (before["chosen"], _by_id(before)["a"]["cause"]) == ("a", "strategy")

    opened = admin(
        gw.base_url,
        "POST",
        "/admin/circuits/a/open",
        json={"version": 0, "reason": "r", "seconds": 600},
    )
    ok(opened)
    items, calls = _state(table), _calls(upstream_a, upstream_b)

    report = _explain(other.base_url)

    assert (report["chosen"], report["blocked"]) == ("b", None)
    a, b = _by_id(report)["a"], _by_id(report)["b"]
    assert (a["outcome"], a["cause"], a["detail"]) == (
        "excluded",
        "circuit",
        "circuit open (maintenance)",
    )
    assert 590_000 <= a["retry_after_ms"] <= 600_000  # the clock runs on meanwhile
    assert (b["outcome"], b["cause"], b["rank"]) == ("chosen", "strategy", 1)
    assert _calls(upstream_a, upstream_b) == calls  # no upstream call
    assert _state(table) == items  # no counter, no binding, no audit entry


def test_a_binding_made_through_one_process_is_the_others_sticky_choice(
    start_gateway,
    spawn_gateway,
    table: TableView,
    upstream_a: MockUpstream,
    upstream_b: MockUpstream,
) -> None:
    gw = start_gateway(two_deployments(upstream_a, upstream_b))
    other = spawn_gateway(None)
    # Bind the client to b: with a open, its request is served by b.
    ok(
        admin(
            gw.base_url,
            "POST",
            "/admin/circuits/a/open",
            json={"version": 0, "reason": "r", "seconds": 60},
        )
    )
    assert chat(gw.base_url).headers["x-edgeproxy-deployment"] == "b"
    table.wait_binding(CALLER, "b")
    table.wait_successes(1, "b")
    items, calls = _state(table), _calls(upstream_a, upstream_b)

    report = _explain(other.base_url)

    assert (report["chosen"], report["sticky"]) == ("b", True)
    assert (report["binding"]["deployment"], report["binding"]["valid"]) == ("b", True)
    b, a = _by_id(report)["b"], _by_id(report)["a"]
    assert (b["outcome"], b["cause"], b["bound"]) == ("chosen", "sticky", True)
    assert (a["outcome"], a["cause"]) == ("excluded", "circuit")
    # Another caller has no binding: the tier decides (nothing above b is eligible).
    fresh = _explain(other.base_url, caller="ip:203.0.113.9")
    assert (fresh["chosen"], fresh["binding"]) == ("b", None)

    # The primary's tier recovers: the binding yields to it (003's tiers first).
    ok(admin(gw.base_url, "POST", "/admin/circuits/a/close", headers={"if-match": '"1"'}))
    items = _state(table)
    report = _explain(other.base_url)
    assert (report["chosen"], report["sticky"]) == ("a", False)
    b = _by_id(report)["b"]
    assert (b["outcome"], b["cause"], b["bound"]) == ("ranked", "tier", True)
    assert _calls(upstream_a, upstream_b) == calls
    assert _state(table) == items


def test_the_routing_metadata_carries_the_reasons_for_an_admin_who_asks(
    start_gateway, upstream_a: MockUpstream, upstream_b: MockUpstream
) -> None:
    gw = start_gateway(
        two_deployments(upstream_a, upstream_b, router={"sticky": {"enabled": False}})
    )
    headers = {"x-unified-routing-metadata": "true", "x-unified-routing-reasons": "true"}

    def routed(key: str) -> dict[str, Any]:
        answer = httpx.post(
            gw.base_url + "/v1/chat/completions",
            json=BODY,
            headers={"authorization": f"Bearer {key}", **headers},
            timeout=30,
        )
        assert answer.status_code == 200, answer.text
        meta: dict[str, Any] = answer.json()["unified_routing"]
        return meta

    decisions = routed(ADMIN_KEY)["decisions"]
    assert [(c["deployment"], c["outcome"]) for c in decisions[0]["candidates"]] == [
        ("a", "chosen"),
        ("b", "ranked"),
    ]
    assert decisions[0]["model"] == "fast-chat"
    assert "decisions" not in routed(CLIENT_KEY)  # the header is an admin's only


def test_bad_explain_orders_are_400(
    start_gateway, upstream_a: MockUpstream, upstream_b: MockUpstream
) -> None:
    gw = start_gateway(two_deployments(upstream_a, upstream_b))
    cases = [
        {"body": BODY, "caller": CALLER},  # neither path nor operation
        {"body": BODY, "operation": "chat"},  # no caller
        {"body": BODY, "operation": "images", "caller": CALLER},
        {"body": BODY, "operation": "chat", "caller": "sk-a-raw-key"},
        {"body": {"messages": []}, "operation": "chat", "caller": CALLER},
    ]
    for order in cases:
        answer = admin(gw.base_url, "POST", "/admin/route/explain", json=order)
        assert answer.status_code == 400, (order, answer.text)
        assert "sk-a-raw-key" not in answer.text
    missing = admin(
        gw.base_url,
        "POST",
        "/admin/route/explain",
        json={"body": BODY, "operation": "chat", "key_id": "0" * 16},
    )
    assert missing.status_code == 404
    unknown = {**BODY, "model": "nope"}
    answer = admin(
        gw.base_url,
        "POST",
        "/admin/route/explain",
        json={"body": unknown, "operation": "chat", "caller": CALLER},
    )
    assert answer.status_code == 404
    client = admin(gw.base_url, "POST", "/admin/route/explain", key=CLIENT_KEY, json={"body": BODY})
    assert client.status_code == 403


def test_the_cli_renders_the_explanation_as_a_table(
    start_gateway,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Any,
    upstream_a: MockUpstream,
    upstream_b: MockUpstream,
) -> None:
    gw = start_gateway(
        two_deployments(upstream_a, upstream_b, router={"sticky": {"enabled": False}})
    )
    monkeypatch.setenv("EDGEPROXY_ADMIN_KEY", ADMIN_KEY)
    ok(
        admin(
            gw.base_url,
            "POST",
            "/admin/circuits/a/open",
            json={"version": 0, "reason": "r", "seconds": 90},
        )
    )
    body = tmp_path / "body.json"
    body.write_text('{"model": "ignored", "messages": [{"role": "user", "content": "hi"}]}')
    argv = ["route", "explain", "--url", gw.base_url, "--model", "fast-chat", "--caller", CALLER]

    assert main([*argv, "--body", str(body)]) == 0
    lines = capsys.readouterr().out.splitlines()

    assert lines[0] == "fast-chat (chat) for key:[redacted] (free): b by simple-shuffle"
    assert lines[1].split() == [
        "deployment", "tier", "outcome", "cause", "rank", "score", "retry-after", "detail",
    ]  # fmt: skip
    assert lines[2].split()[:4] == ["a", "1", "excluded", "circuit"]
    assert "circuit open (maintenance)" in lines[2]
    assert lines[3].split()[:6] == ["*b", "0", "chosen", "strategy", "(simple-shuffle)", "1"]
    assert main([*argv, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["chosen"] == "b"
    assert main(["route", "explain", "--url", gw.base_url, "--model", "fast-chat"]) == 2
    assert "name the caller" in capsys.readouterr().err


def test_the_status_page_asks_the_explainer_from_its_own_script(
    start_gateway, upstream_a: MockUpstream, upstream_b: MockUpstream
) -> None:
    gw = start_gateway(two_deployments(upstream_a, upstream_b))
    page = httpx.get(gw.base_url + "/admin/", timeout=30).text
    assert 'src="assets/explain.js"' in page
    assert 'id="explain-form"' in page
    script = httpx.get(gw.base_url + "/admin/assets/explain.js", timeout=30)
    assert script.status_code == 200
    assert script.headers["content-type"].startswith("text/javascript")
    assert "content-security-policy" in script.headers
    # It posts where the API is (relative to admin/) and sets API data as text only.
    assert 'fetch("route/explain"' in script.text
    assert "innerHTML" not in script.text


def test_each_request_logs_its_reasons_in_one_field(
    start_gateway,
    caplog: pytest.LogCaptureFixture,
    upstream_a: MockUpstream,
    upstream_b: MockUpstream,
) -> None:
    gw = start_gateway(
        two_deployments(upstream_a, upstream_b, router={"sticky": {"enabled": False}})
    )
    open_a = {"version": 0, "reason": "r", "seconds": 60}
    ok(admin(gw.base_url, "POST", "/admin/circuits/a/open", json=open_a))
    caplog.set_level(logging.INFO, logger="edgeproxy.service.gateway")

    assert chat(gw.base_url).status_code == 200

    lines = [r.getMessage() for r in caplog.records if r.getMessage().startswith("routed ")]
    assert len(lines) == 1
    field = lines[0].split(" route=", 1)[1]
    assert re.fullmatch(r"fast-chat: a:circuit\(\d+s\) \*b:strategy#1", field), field
