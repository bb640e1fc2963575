"""Context windows decided before the call (``context_window``, ``max_output_tokens``).

A request the declared windows cannot hold never reaches those upstreams: a
deployment too small is passed over for one that fits, a pool with none that
fits runs its ``context_window`` fallback chain, and without one the client
gets 400 ``context_length_exceeded`` with no upstream call at all.
"""

from __future__ import annotations

import httpx
import openai
import pytest

from edgeproxy_dev.mock_upstream import MockUpstream
from tests.fixtures.configs import config, deployment
from tests.integration.resilience.helpers import (
    ADMIN_KEY,
    CLIENT_KEY,
    keys,
    model_requests,
    router,
)

LONG = [{"role": "user", "content": "word " * 400}]  # about 500 tokens by the estimate


def test_a_prompt_over_every_window_is_a_400_without_an_upstream_call(
    start_gateway, sdk, upstream_a: MockUpstream
) -> None:
    gw = start_gateway(
        config(deployment("a", upstream_a, context_window=256), router=router(), gateway=keys())
    )
    with pytest.raises(openai.BadRequestError) as caught:
        sdk(gw.base_url).chat.completions.create(model="fast-chat", messages=LONG)
    assert caught.value.code == "context_length_exceeded"
    assert model_requests(upstream_a) == []
    # A short one still fits.
    sdk(gw.base_url).chat.completions.create(
        model="fast-chat", messages=[{"role": "user", "content": "Hi"}], max_tokens=16
    )
    assert len(model_requests(upstream_a)) == 1


def test_the_deployment_that_fits_serves_and_the_small_one_is_not_called(
    start_gateway, sdk, upstream_a: MockUpstream, upstream_b: MockUpstream
) -> None:
    gw = start_gateway(
        config(
            deployment("small", upstream_a, priority=1, context_window=256),
            deployment("large", upstream_b, context_window=8192),
            router=router(),
            gateway=keys(),
        )
    )
    answer = sdk(gw.base_url).chat.completions.create(model="fast-chat", messages=LONG)
    assert answer.choices[0].message.content.startswith("Hello from b!")
    assert model_requests(upstream_a) == []


def test_an_output_over_the_cap_or_window_runs_the_context_window_chain(
    start_gateway, sdk, upstream_a: MockUpstream, upstream_b: MockUpstream
) -> None:
    gw = start_gateway(
        config(
            deployment("a", upstream_a, context_window=4096, max_output_tokens=512),
            deployment("long", upstream_b, model="long-chat", upstream_model="mock-large"),
            fallbacks=[{"model": "fast-chat", "reason": "context_window", "to": ["long-chat"]}],
            router=router(),
            gateway=keys(),
        )
    )
    hi = [{"role": "user", "content": "Hi"}]
    answer = sdk(gw.base_url).chat.completions.create(
        model="fast-chat", messages=hi, max_tokens=1024
    )
    assert answer.model == "mock-large"
    assert model_requests(upstream_a) == []


def _answer_counting(prompt_tokens: int) -> dict[str, object]:
    """A chat answer whose upstream counted ``prompt_tokens`` (a chat template's included)."""
    return {
        "id": "chatcmpl-templated",
        "object": "chat.completion",
        "created": 1,
        "model": "mock-model",
        "choices": [
            {"index": 0, "message": {"role": "assistant", "content": "ok"}, "finish_reason": "stop"}
        ],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": 1,
            "total_tokens": prompt_tokens + 1,
        },
    }


def test_after_answers_count_a_chat_template_the_window_refuses_without_a_call(
    start_gateway, sdk, upstream_a: MockUpstream
) -> None:
    gw = start_gateway(
        config(deployment("a", upstream_a, context_window=200), router=router(), gateway=keys())
    )
    client = sdk(gw.base_url)
    prompt = [{"role": "user", "content": "word " * 100}]  # 126 tokens by the text
    # 126 + 50 fit in 200 by the text; the server's template makes the prompt 190.
    upstream_a.set_faults([{"body": _answer_counting(190)}])
    client.chat.completions.create(model="fast-chat", messages=prompt, max_tokens=50)
    assert len(model_requests(upstream_a)) == 1
    for _ in range(2):
        with pytest.raises(openai.BadRequestError) as caught:
            client.chat.completions.create(model="fast-chat", messages=prompt, max_tokens=50)
        assert caught.value.code == "context_length_exceeded"
        assert "prompt estimate 190" in caught.value.message
    assert len(model_requests(upstream_a)) == 1  # refused before any call
    # What still fits by the calibrated count is served.
    client.chat.completions.create(model="fast-chat", messages=prompt, max_tokens=5)
    assert len(model_requests(upstream_a)) == 2


def _post(base_url: str, path: str, key: str, body: dict[str, object]) -> httpx.Response:
    headers = {"authorization": f"Bearer {key}"}
    return httpx.post(f"{base_url}{path}", json=body, headers=headers, timeout=30)


def test_the_explainer_rules_out_the_windows_the_router_rules_out(
    start_gateway, upstream_a: MockUpstream, upstream_b: MockUpstream
) -> None:
    gw = start_gateway(
        config(
            deployment("small", upstream_a, priority=1, context_window=256),
            deployment("large", upstream_a, context_window=8192, max_output_tokens=512),
            deployment("long", upstream_b, model="long-chat", upstream_model="mock-large"),
            fallbacks=[{"model": "fast-chat", "reason": "context_window", "to": ["long-chat"]}],
            router=router(),
            gateway=keys(),
        )
    )
    for extra, chosen, too_small, blocked, fallbacks, served in [
        # One window holds it: the small one is passed over, by both.
        ({}, "large", ["small"], None, [], "large"),
        # None holds it: blocked by the judge's reason, the chain the router runs.
        (
            {"max_tokens": 1024},
            None,
            ["large", "small"],
            {"reason": "context_window", "retry_after_ms": None},
            ["long-chat"],
            "long",
        ),
    ]:
        body = {"model": "fast-chat", "messages": LONG, **extra}
        order = {"path": "/v1/chat/completions", "body": body, "caller": "10.0.0.9"}
        explained = _post(gw.base_url, "/admin/route/explain", ADMIN_KEY, order)
        assert explained.status_code == 200, explained.text
        report = explained.json()
        assert (report["chosen"], report["too_small"], report["blocked"]) == (
            chosen,
            too_small,
            blocked,
        )
        assert report["fallbacks"] == fallbacks
        answer = _post(gw.base_url, "/v1/chat/completions", CLIENT_KEY, body)
        assert answer.status_code == 200, answer.text
        assert answer.headers["x-edgeproxy-deployment"] == served
    # The small one was never called; the large one once (the request it held).
    assert len(model_requests(upstream_a)) == 1


def test_a_chat_templates_calibration_does_not_refuse_a_legacy_completion_of_that_size(
    start_gateway, sdk, upstream_a: MockUpstream
) -> None:
    # The calibration is the deployment's for the protocol its answers came in: a chat
    # template's tokens are not counted against a raw completion prompt, by the router
    # or by the explainer.
    gw = start_gateway(
        config(
            deployment("a", upstream_a, context_window=200, operations=["chat", "completions"]),
            router=router(),
            gateway=keys(),
        )
    )
    client = sdk(gw.base_url)
    prompt = [{"role": "user", "content": "word " * 100}]
    upstream_a.set_faults([{"body": _answer_counting(190)}])
    client.chat.completions.create(model="fast-chat", messages=prompt, max_tokens=50)
    chat = {"model": "fast-chat", "messages": prompt, "max_tokens": 50}
    text = {"model": "fast-chat", "prompt": "word " * 100, "max_tokens": 50}  # 125 by the text
    for path, body, chosen, too_small in [
        ("/v1/chat/completions", chat, None, ["a"]),
        ("/v1/completions", text, "a", []),
    ]:
        order = {"path": path, "body": body, "caller": "10.0.0.9"}
        explained = _post(gw.base_url, "/admin/route/explain", ADMIN_KEY, order)
        assert explained.status_code == 200, explained.text
        assert (explained.json()["chosen"], explained.json()["too_small"]) == (chosen, too_small)
    with pytest.raises(openai.BadRequestError) as caught:
        client.chat.completions.create(model="fast-chat", messages=prompt, max_tokens=50)
    assert caught.value.code == "context_length_exceeded"
    assert len(model_requests(upstream_a)) == 1
    answer = _post(gw.base_url, "/v1/completions", CLIENT_KEY, text)
    assert answer.status_code == 200, answer.text
    assert [r["path"] for r in upstream_a.requests()].count("/v1/completions") == 1
