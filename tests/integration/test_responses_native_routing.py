"""A Responses request that needs the native API reaches a native deployment at once.

Three chat-only deployments rank ahead of the one native deployment (a higher
priority tier). A request with ``previous_response_id`` has no chat
translation: routing filters the chat deployments out before admission, so
no attempt slot, rpm count or upstream call is spent on them.
"""

from __future__ import annotations

from typing import Any

import httpx

from edgeproxy_dev.mock_upstream import MockUpstream
from tests.fixtures.configs import config, deployment
from tests.fixtures.upstream import MakeUpstream

CHAT = ("c1", "c2", "c3")


def _model_calls(upstream: MockUpstream) -> list[dict[str, Any]]:
    return [r for r in upstream.requests() if r["path"].startswith("/v1/")]


def _respond(base_url: str, model: str, **extra: Any) -> httpx.Response:
    body = {"model": model, "input": "And tomorrow?", **extra}
    return httpx.post(base_url + "/v1/responses", json=body, timeout=30)


def test_native_only_requests_skip_chat_deployments_before_any_attempt(
    start_gateway, make_upstream: MakeUpstream
) -> None:
    chats = {name: make_upstream(name) for name in CHAT}
    native = make_upstream("n")
    gw = start_gateway(
        config(
            *(
                deployment(n, up, model="mixed", priority=2, rpm_limit=50)
                for n, up in chats.items()
            ),
            deployment("n", native, model="mixed", provider="openai", operations=["responses"]),
            router={"sticky": {"enabled": False}},
        )
    )
    for _ in range(12):
        answer = _respond(gw.base_url, "mixed", previous_response_id="resp_earlier")
        assert answer.status_code == 200, answer.text
        assert answer.headers["x-edgeproxy-deployment"] == "n"
    assert len(_model_calls(native)) == 12
    assert all(_model_calls(up) == [] for up in chats.values())

    # A translatable request still goes to the higher tier's chat deployments.
    plain = _respond(gw.base_url, "mixed")
    assert plain.status_code == 200
    assert plain.headers["x-edgeproxy-deployment"] in CHAT


def test_without_a_native_deployment_the_400_names_the_parameter_and_calls_nothing(
    start_gateway, make_upstream: MakeUpstream
) -> None:
    chats = {name: make_upstream(name) for name in CHAT}
    gw = start_gateway(config(*(deployment(n, up, model="chat-only") for n, up in chats.items())))
    answer = _respond(gw.base_url, "chat-only", previous_response_id="resp_earlier")
    assert answer.status_code == 400
    error = answer.json()["error"]
    assert (error["code"], error["param"]) == ("unsupported_request", "previous_response_id")
    assert all(_model_calls(up) == [] for up in chats.values())
