"""A key's ``max_parallel_requests`` holds across two gateway processes on one table.

Every upstream answer takes 3 s, so a burst of the capped key's requests
is in flight at once: two reach the upstream, the rest are refused 429 at
once without reaching it and without being counted against the key's rpm
limit, while another key's burst at the same moment is served in full.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import httpx

from edgeproxy_dev.mock_upstream import MockUpstream
from tests.fixtures.clock import FleetClock
from tests.fixtures.configs import config, deployment
from tests.fixtures.table import wait_for
from tests.integration.keys.helpers import ENV, HELLO, bearer, chat, create_key

CAP = 2
CAPPED_CALLS = 8
OTHER_CALLS = 6
ANSWER_MS = 3000  # long enough that the whole burst arrives while two are held


def _model_calls(upstream: MockUpstream) -> int:
    return sum(1 for r in upstream.requests() if r["path"].endswith("/chat/completions"))


def _burst(calls: list[tuple[str, str, str]]) -> list[httpx.Response]:
    async def run() -> list[httpx.Response]:
        limits = httpx.Limits(max_connections=len(calls))
        async with httpx.AsyncClient(timeout=30, limits=limits) as http:
            return list(
                await asyncio.gather(
                    *(
                        http.post(
                            url + "/v1/chat/completions",
                            json={"model": model, "messages": HELLO},
                            headers=bearer(key),
                        )
                        for url, key, model in calls
                    )
                )
            )

    return asyncio.run(run())


def test_a_capped_key_never_has_more_than_its_cap_in_flight_across_two_processes(
    spawn_gateway: Callable[..., Any],
    start_gateway: Callable[..., Any],
    clock: FleetClock,
    upstream_a: MockUpstream,
    upstream_b: MockUpstream,
) -> None:
    cfg = config(deployment("a", upstream_a), deployment("b", upstream_b, model="other-chat"))
    remote, local = spawn_gateway(cfg, env=ENV), start_gateway(cfg, env=ENV)
    urls = [remote.base_url, local.base_url]
    capped = create_key(local.base_url, name="capped", max_parallel_requests=CAP, rpm_limit=3)
    assert capped["max_parallel_requests"] == CAP
    other = create_key(local.base_url, name="other")["key"]
    for upstream in (upstream_a, upstream_b):
        upstream.set_faults([], persistent={"latency_ms": ANSWER_MS})

    answers = _burst(
        [(urls[i % 2], capped["key"], "fast-chat") for i in range(CAPPED_CALLS)]
        + [(urls[i % 2], other, "other-chat") for i in range(OTHER_CALLS)]
    )
    mine, others = answers[:CAPPED_CALLS], answers[CAPPED_CALLS:]
    assert sorted(a.status_code for a in mine) == [200] * CAP + [429] * (CAPPED_CALLS - CAP)
    refused = [a for a in mine if a.status_code == 429]
    assert all(a.json()["error"]["code"] == "rate_limit_exceeded" for a in refused)
    assert all("max_parallel_requests" in a.json()["error"]["message"] for a in refused)
    assert all(float(a.headers["retry-after"]) >= 1 for a in refused)
    assert upstream_a.peak_concurrency == CAP  # reached on both processes together, never passed
    assert _model_calls(upstream_a) == CAP  # the refused ones never reached it
    # The other key, at the same moment: every request served, more than the cap at once.
    assert [a.status_code for a in others] == [200] * OTHER_CALLS
    assert upstream_b.peak_concurrency > CAP

    # The slots were released with the answers, and the refusals took nothing of the
    # rpm limit (3): a third request is served, the fourth is over the rpm limit.
    upstream_a.set_faults([], persistent={"latency_ms": 0})
    assert chat(remote.base_url, capped["key"]).status_code == 200
    over = chat(local.base_url, capped["key"])
    assert over.status_code == 429
    assert "requests per minute" in over.json()["error"]["message"]


def test_a_stream_holds_its_slot_until_it_ends(
    spawn_gateway: Callable[..., Any],
    start_gateway: Callable[..., Any],
    clock: FleetClock,
    upstream_a: MockUpstream,
) -> None:
    cfg = config(deployment("a", upstream_a))
    remote, local = spawn_gateway(cfg, env=ENV), start_gateway(cfg, env=ENV)
    key = create_key(local.base_url, name="one", max_parallel_requests=1)["key"]
    body = {"model": "fast-chat", "messages": HELLO, "stream": True}
    # The upstream sends its first event and then goes silent: the stream stays open on the
    # other process for as long as the test needs, whatever the machine's load.
    upstream_a.set_faults([{"stall_after_chunks": 1}])
    with httpx.stream(
        "POST",
        remote.base_url + "/v1/chat/completions",
        json=body,
        headers=bearer(key),
        timeout=30,
    ) as streaming:
        assert streaming.status_code == 200
        refused = chat(local.base_url, key)
        assert refused.status_code == 429
        assert refused.json()["error"]["code"] == "rate_limit_exceeded"
    # The client left: the stream is over and its slot is released.
    wait_for(lambda: chat(local.base_url, key).status_code, lambda s: s == 200, "slot released")

    # A stream read to its end releases the slot too, just after its last byte.
    with httpx.stream(
        "POST",
        remote.base_url + "/v1/chat/completions",
        json=body,
        headers=bearer(key),
        timeout=30,
    ) as streaming:
        text = streaming.read().decode()
    assert "[DONE]" in text
    wait_for(lambda: chat(local.base_url, key).status_code, lambda s: s == 200, "slot released")
