"""A request an adapter cannot carry goes to a deployment that can, before any attempt.

Three Anthropic deployments rank ahead of one OpenAI-compatible deployment (a
higher priority tier). A chat with ``n: 2`` cannot be carried by Anthropic's
Messages API (one choice per answer): routing reads that from the provider
kind's declaration (``config/providers.py`` ``CARRIAGE``) and filters them
out before selection, so no attempt slot, rpm count or upstream call is
spent on them, and the compatible deployment in the lower tier serves it.
"""

from __future__ import annotations

from typing import Any

import httpx

from edgeproxy_dev.mock_upstream import MockUpstream
from tests.fixtures.configs import config, deployment
from tests.fixtures.table import TableView, wait_for
from tests.fixtures.upstream import MakeUpstream
from tests.integration.admin.helpers import CLIENT_KEY, admin, keys, ok

CLAUDES = ("claude-1", "claude-2", "claude-3")
HELLO = [{"role": "user", "content": "Hello!"}]


def _model_calls(upstream: MockUpstream) -> list[dict[str, Any]]:
    return [r for r in upstream.requests() if r["path"].startswith("/v1/")]


def _chat(base_url: str, model: str, **extra: Any) -> httpx.Response:
    body = {"model": model, "messages": HELLO, **extra}
    return httpx.post(base_url + "/v1/chat/completions", json=body, timeout=30)


def test_n_above_one_skips_anthropic_deployments_before_any_attempt(
    start_gateway: Any, make_upstream: MakeUpstream, table: TableView
) -> None:
    claudes = {name: make_upstream(name) for name in CLAUDES}
    compat = make_upstream("compat")
    gw = start_gateway(
        config(
            *(
                deployment(n, up, model="mixed", provider="anthropic", priority=1, rpm_limit=50)
                for n, up in claudes.items()
            ),
            deployment("compat", compat, model="mixed", priority=0, rpm_limit=50),
            router={"sticky": {"enabled": False}},
        )
    )
    for _ in range(6):
        answer = _chat(gw.base_url, "mixed", n=2)
        assert answer.status_code == 200, answer.text
        assert answer.headers["x-edgeproxy-deployment"] == "compat"
    calls = _model_calls(compat)
    assert len(calls) == 6
    assert all(call["body"]["n"] == 2 for call in calls)
    assert all(_model_calls(up) == [] for up in claudes.values())
    wait_for(
        lambda: table.usage_total("compat", "requests"),
        lambda seen: seen == 6,
        "the compatible deployment's six starts counted",
    )
    assert [table.usage_total(name, "requests") for name in CLAUDES] == [0, 0, 0]
    assert [table.circuit(name).failures for name in CLAUDES] == [0, 0, 0]

    # A request the higher tier can carry still goes there.
    plain = _chat(gw.base_url, "mixed")
    assert plain.status_code == 200
    assert plain.headers["x-edgeproxy-deployment"] in CLAUDES


def test_when_no_deployment_can_carry_it_the_400_names_the_feature_and_the_kinds(
    start_gateway: Any, make_upstream: MakeUpstream, table: TableView
) -> None:
    claudes = {name: make_upstream(name) for name in CLAUDES[:2]}
    gw = start_gateway(
        config(
            *(deployment(n, up, model="claude", provider="anthropic") for n, up in claudes.items()),
        )
    )
    answer = _chat(gw.base_url, "claude", n=3)
    assert answer.status_code == 400, answer.text
    error = answer.json()["error"]
    assert (error["type"], error["code"], error["param"]) == (
        "invalid_request_error",
        "unsupported_request",
        "n",
    )
    assert "n > 1" in error["message"]
    assert "anthropic" in error["message"]
    assert all(_model_calls(up) == [] for up in claudes.values())
    assert [table.usage_total(name, "requests") for name in claudes] == [0, 0]

    # A content part the Messages translation has no block for is refused the same way.
    document = {"type": "file", "file": {"file_id": "file-1"}}
    parts = [{"type": "text", "text": "Summarize."}, document]
    answer = _chat(gw.base_url, "claude", messages=[{"role": "user", "content": parts}])
    assert answer.status_code == 400, answer.text
    error = answer.json()["error"]
    assert (error["code"], error["param"]) == ("unsupported_request", "messages")
    assert "'file'" in error["message"]
    assert "anthropic" in error["message"]
    assert all(_model_calls(up) == [] for up in claudes.values())


def test_the_explainer_names_the_feature_and_a_pin_is_refused_by_the_adapter_s_guard(
    start_gateway: Any, make_upstream: MakeUpstream
) -> None:
    claudes = {name: make_upstream(name) for name in CLAUDES[:2]}
    compat = make_upstream("compat")
    gw = start_gateway(
        config(
            *(
                deployment(n, up, model="mixed", provider="anthropic", priority=1)
                for n, up in claudes.items()
            ),
            deployment("compat", compat, model="mixed"),
            gateway=keys(),
        )
    )
    body = {"model": "mixed", "messages": HELLO, "n": 2}
    order = {"path": "/v1/chat/completions", "body": body, "caller": "ip:203.0.113.9"}
    report = ok(admin(gw.base_url, "POST", "/admin/route/explain", json=order))
    assert report["chosen"] == "compat"
    for name in claudes:
        candidate = next(c for c in report["candidates"] if c["deployment"] == name)
        assert (candidate["outcome"], candidate["cause"], candidate["detail"]) == (
            "excluded",
            "feature",
            "n",
        )
    served = httpx.post(
        gw.base_url + "/v1/chat/completions",
        json=body,
        headers={"authorization": f"Bearer {CLIENT_KEY}"},
        timeout=30,
    )
    assert served.headers["x-edgeproxy-deployment"] == report["chosen"]

    # An admin's pin bypasses selection: the adapter's own guard, from the same declaration.
    pinned = admin(
        gw.base_url,
        "POST",
        "/v1/chat/completions",
        json=body,
        headers={"x-route-pin": "claude-1"},
    )
    assert pinned.status_code == 400, pinned.text
    error = pinned.json()["error"]
    assert (error["code"], error["param"]) == ("unsupported_request", "n")
    assert "anthropic" in error["message"]
    assert all(_model_calls(up) == [] for up in claudes.values())
