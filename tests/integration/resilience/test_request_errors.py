"""Request and configuration failures: no retry, dedicated fallbacks, quarantine."""

from __future__ import annotations

import openai
import pytest

from edgeproxy_dev.mock_upstream import MockUpstream
from tests.fixtures.configs import config, deployment
from tests.integration.resilience.helpers import (
    HELLO,
    deployment_status,
    keys,
    model_requests,
    post_chat,
    router,
)

CONTEXT = {
    "status": 400,
    "error": {
        "message": "This model's maximum context length is 8192 tokens.",
        "code": "context_length_exceeded",
        "param": "messages",
    },
}
POLICY = {
    "status": 400,
    "error": {
        "message": "Your request was rejected as a result of our safety system.",
        "code": "content_policy_violation",
    },
}


def test_context_window_moves_to_its_fallback_chain(
    start_gateway, sdk, upstream_a: MockUpstream, upstream_b: MockUpstream
) -> None:
    gw = start_gateway(
        config(
            deployment("a1", upstream_a, priority=1),
            deployment("a2", upstream_a),
            deployment("long", upstream_b, model="long-chat", upstream_model="mock-large"),
            fallbacks=[{"model": "fast-chat", "reason": "context_window", "to": ["long-chat"]}],
            router=router(),
            gateway=keys(),
        )
    )
    upstream_a.set_faults([], persistent=CONTEXT)
    answer = sdk(gw.base_url).chat.completions.create(model="fast-chat", messages=HELLO)
    assert answer.model == "mock-large"  # the model that answered
    assert answer.choices[0].message.content.startswith("Hello from b!")
    # No retry on the same model: its other deployment would reject it the same way.
    assert len(model_requests(upstream_a)) == 1
    assert len(model_requests(upstream_b)) == 1


def test_context_window_without_a_chain_is_the_providers_400(
    start_gateway, sdk, upstream_a: MockUpstream
) -> None:
    gw = start_gateway(config(deployment("a", upstream_a), router=router(), gateway=keys()))
    upstream_a.set_faults([], persistent=CONTEXT)
    with pytest.raises(openai.BadRequestError) as caught:
        sdk(gw.base_url).chat.completions.create(model="fast-chat", messages=HELLO)
    assert caught.value.code == "context_length_exceeded"
    assert caught.value.param == "messages"
    assert len(model_requests(upstream_a)) == 1


def test_content_policy_is_not_retried_and_keeps_the_providers_reason(
    failover_gateway, sdk, upstream_a: MockUpstream, upstream_b: MockUpstream
) -> None:
    gw = failover_gateway(
        deployment("other", upstream_b, model="other-chat"),
        # Only a content-policy chain would apply; a general one must not be used.
        fallbacks=[{"model": "fast-chat", "reason": "general", "to": ["other-chat"]}],
        router=router(),
        gateway=keys(),
    )
    upstream_a.set_faults([], persistent=POLICY)
    with pytest.raises(openai.BadRequestError) as caught:
        sdk(gw.base_url).chat.completions.create(model="fast-chat", messages=HELLO)
    assert caught.value.status_code == 400
    assert caught.value.code == "content_policy_violation"
    assert caught.value.body["message"] == POLICY["error"]["message"]
    assert len(model_requests(upstream_a)) == 1
    assert model_requests(upstream_b) == []
    # A rejected request never lowers health: the deployment is still available.
    assert deployment_status(gw.base_url, "fast-chat")["a"]["status"] == "available"


def test_content_policy_chain_is_used_when_configured(
    start_gateway, upstream_a: MockUpstream, upstream_b: MockUpstream
) -> None:
    gw = start_gateway(
        config(
            deployment("a", upstream_a),
            deployment("lenient", upstream_b, model="lenient-chat"),
            fallbacks=[{"model": "fast-chat", "reason": "content_policy", "to": ["lenient-chat"]}],
            router=router(),
            gateway=keys(),
        )
    )
    upstream_a.set_faults([], persistent=POLICY)
    answer = post_chat(gw.base_url, "fast-chat", metadata=True)
    assert answer.status_code == 200
    routing = answer.json()["unified_routing"]
    assert routing["fallback_used"] is True
    assert routing["model"] == "lenient-chat"
    assert [a["error_class"] for a in routing["attempts"]] == ["request", None]


def test_401_quarantines_the_deployment(
    failover_gateway, sdk, upstream_a: MockUpstream, upstream_b: MockUpstream
) -> None:
    gw = failover_gateway(
        router=router(circuit={"configuration_cooldown_seconds": 120}),
        gateway=keys(),
    )
    upstream_a.set_faults([], persistent={"status": 401})
    chat = sdk(gw.base_url).chat.completions
    for _ in range(3):
        answer = chat.create(model="fast-chat", messages=HELLO)
        assert answer.choices[0].message.content.startswith("Hello from b!")
    assert len(model_requests(upstream_a)) == 1  # quarantined at once, then never asked
    status = deployment_status(gw.base_url, "fast-chat")
    assert status["a"]["status"] == "cooldown"
    assert status["a"]["cause"] == "configuration"
    assert 110_000 < status["a"]["retry_after_ms"] <= 120_000
    assert status["b"]["status"] == "available"


def test_misconfiguration_everywhere_is_model_unavailable(
    start_gateway, sdk, upstream_a: MockUpstream
) -> None:
    gw = start_gateway(config(deployment("a", upstream_a), router=router(), gateway=keys()))
    upstream_a.set_faults([], persistent={"status": 401})
    with pytest.raises(openai.AuthenticationError) as caught:
        sdk(gw.base_url).chat.completions.create(model="fast-chat", messages=HELLO)
    assert "sk-mock-abcdef" not in str(caught.value.body)  # the provider's key text is redacted
    with pytest.raises(openai.InternalServerError) as unavailable:
        sdk(gw.base_url).chat.completions.create(model="fast-chat", messages=HELLO)
    assert unavailable.value.status_code == 503
    assert unavailable.value.code == "model_unavailable"
    assert "retry-after" not in unavailable.value.response.headers
    assert len(model_requests(upstream_a)) == 1
