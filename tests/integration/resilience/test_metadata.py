"""``x-unified-routing-metadata: true``: the routing decision, attempt by attempt."""

from __future__ import annotations

from edgeproxy_dev.mock_upstream import MockUpstream
from tests.fixtures.configs import config, deployment
from tests.fixtures.sse import sse_events
from tests.integration.resilience.helpers import (
    keys,
    post_chat,
    router,
)


def test_metadata_shows_attempts_and_fallback(
    start_gateway, upstream_a: MockUpstream, upstream_b: MockUpstream
) -> None:
    gw = start_gateway(
        config(
            deployment("a1", upstream_a, priority=1),
            deployment("a2", upstream_a),
            deployment("spare", upstream_b, model="spare-chat"),
            fallbacks=[{"model": "fast-chat", "to": ["spare-chat"]}],
            router=router(strategy="least-busy", json={"max_attempts": 2}),
            gateway=keys(),
        )
    )
    upstream_a.set_faults([{"status": 503}, {"reset": True}])
    answer = post_chat(gw.base_url, "fast-chat", metadata=True)
    assert answer.status_code == 200
    routing = answer.json()["unified_routing"]
    assert routing["strategy"] == "least-busy"
    assert routing["deployment"] == "spare"
    assert routing["model"] == "spare-chat"
    assert routing["fallback_used"] is True
    attempts = routing["attempts"]
    assert [(a["model"], a["deployment"]) for a in attempts] == [
        ("fast-chat", "a1"),
        ("fast-chat", "a2"),
        ("spare-chat", "spare"),
    ]
    assert [(a["status"], a["error_class"], a["error_kind"]) for a in attempts] == [
        (503, "transient", "http"),
        (None, "transient", "reset"),
        (200, None, None),
    ]
    assert all(isinstance(a["latency_ms"], int) and a["latency_ms"] >= 0 for a in attempts)
    assert "127.0.0.1" not in answer.text  # deployment ids only, never upstream URLs


def test_metadata_only_when_asked(start_gateway, upstream_a: MockUpstream) -> None:
    gw = start_gateway(config(deployment("a", upstream_a), router=router(), gateway=keys()))
    assert "unified_routing" not in post_chat(gw.base_url, "fast-chat").json()
    plain = post_chat(gw.base_url, "fast-chat", stream=True)
    assert "unified_routing" not in plain.text
    streamed = sse_events(post_chat(gw.base_url, "fast-chat", stream=True, metadata=True))
    [routing] = [e["unified_routing"] for e in streamed[:-1] if "unified_routing" in e]
    assert routing["deployment"] == "a"
    assert routing["fallback_used"] is False
    assert [a["status"] for a in routing["attempts"]] == [200]
