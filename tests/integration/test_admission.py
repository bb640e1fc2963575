"""Exact tpm admission and in-flight counts of long attempts, across gateway processes.

Every attempt on a deployment with ``tpm_limit`` reserves its token estimate
(``routing/estimates/tokens.py``) in the minute bucket with a conditional ADD before
the call, and the outcome write reconciles it with the reported usage. An
attempt that runs for minutes moves its in-flight count into the current
bucket each minute, so least-busy keeps seeing it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import httpx

from edgeproxy_dev.mock_upstream import MockUpstream
from tests.fixtures.clock import FleetClock
from tests.fixtures.configs import config, deployment
from tests.fixtures.table import TableView, wait_for

HELLO = [{"role": "user", "content": "Hello!"}]
# "user" + "Hello!": ceil(10 / 4) = 3 prompt tokens, plus max_tokens: 100 reserved each.
REQUEST = {"model": "fast-chat", "messages": HELLO, "max_tokens": 97}
RESERVED = 100
TPM_LIMIT = 1000


def _answer(prompt: int, completion: int) -> dict[str, Any]:
    return {
        "id": "chatcmpl-fixed",
        "object": "chat.completion",
        "created": 1_700_000_000,
        "model": "mock",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": "Hi."},
                "finish_reason": "stop",
            }
        ],
        "usage": {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
        },
    }


def _fresh_minute(clock: FleetClock) -> int:
    """Move to the start of a minute, so a burst cannot straddle two buckets."""
    into = clock.now() % 60
    if into > 20:
        clock.advance(60 - into + 1)
    return int(clock.now() // 60)


def test_a_tpm_limit_holds_exactly_under_64_concurrent_callers_on_two_processes(
    spawn_gateway: Callable[..., Any],
    start_gateway: Callable[..., Any],
    clock: FleetClock,
    upstream_a: MockUpstream,
    table: TableView,
) -> None:
    cfg = config(deployment("a", upstream_a, tpm_limit=TPM_LIMIT))
    remote = spawn_gateway(cfg)
    local = start_gateway(cfg)
    minute = _fresh_minute(clock)
    # Each answer uses exactly its reservation, so reconciling frees no room mid-burst
    # and the limit admits exactly TPM_LIMIT // RESERVED calls.
    upstream_a.set_faults([], persistent={"body": _answer(prompt=3, completion=RESERVED - 3)})

    async def burst() -> list[httpx.Response]:
        limits = httpx.Limits(max_connections=64)
        async with httpx.AsyncClient(timeout=30, limits=limits) as http:
            urls = [remote.base_url, local.base_url]
            return list(
                await asyncio.gather(
                    *(
                        http.post(urls[i % 2] + "/v1/chat/completions", json=REQUEST)
                        for i in range(64)
                    )
                )
            )

    answers = asyncio.run(burst())
    statuses = [a.status_code for a in answers]
    assert statuses.count(200) == TPM_LIMIT // RESERVED
    assert statuses.count(429) == 64 - TPM_LIMIT // RESERVED
    calls = [r for r in upstream_a.requests() if r["path"] == "/v1/chat/completions"]
    assert len(calls) == TPM_LIMIT // RESERVED  # refused before the upstream was called
    used = sum(a.json()["usage"]["total_tokens"] for a in answers if a.status_code == 200)
    assert used == TPM_LIMIT
    wait_for(
        lambda: (
            table.counter_at("a", "reserved_tokens", minute),
            table.counter_at("a", "inflight", minute),
        ),
        lambda seen: seen == (TPM_LIMIT, 0),
        "every admitted call settled",
    )


def test_a_failed_attempt_gives_its_reservation_back(
    start_gateway: Callable[..., Any],
    clock: FleetClock,
    upstream_a: MockUpstream,
    table: TableView,
) -> None:
    gw = start_gateway(config(deployment("a", upstream_a, tpm_limit=TPM_LIMIT)))
    minute = _fresh_minute(clock)
    upstream_a.set_faults([{"status": 400}])
    answer = httpx.post(gw.base_url + "/v1/chat/completions", json=REQUEST, timeout=30)
    assert answer.status_code == 400
    wait_for(
        lambda: (
            table.counter_at("a", "requests", minute),
            table.counter_at("a", "inflight", minute),
        ),
        lambda seen: seen == (1, 0),
        "the failed attempt settled",
    )
    assert table.counter_at("a", "reserved_tokens", minute) == 0
    # The room is back: the next request is admitted and its usage is what stays reserved.
    answer = httpx.post(gw.base_url + "/v1/chat/completions", json=REQUEST, timeout=30)
    assert answer.status_code == 200
    wait_for(
        lambda: table.counter_at("a", "reserved_tokens", minute),
        lambda seen: seen == answer.json()["usage"]["total_tokens"],
        "the success reconciled",
    )


def test_a_three_minute_stream_stays_counted_in_flight(
    start_gateway: Callable[..., Any],
    clock: FleetClock,
    upstream_a: MockUpstream,
    table: TableView,
) -> None:
    gw = start_gateway(config(deployment("a", upstream_a)))
    start = _fresh_minute(clock)
    upstream_a.set_faults([{"stall_after_chunks": 2, "keepalive_ms": 200}])
    body = {"model": "fast-chat", "messages": HELLO, "stream": True}
    with httpx.stream("POST", gw.base_url + "/v1/chat/completions", json=body, timeout=60) as s:
        lines = s.iter_lines()
        assert next(line for line in lines if line.startswith("data: "))  # committed
        # Counted within one flush window (EDGEPROXY_COALESCE_MS) of the start.
        wait_for(
            lambda: table.counter_at("a", "inflight", start),
            lambda seen: seen == 1,
            "the start counted in flight",
        )
        for minute in (start + 1, start + 2, start + 3):
            clock.advance(60)
            wait_for(
                lambda m=minute: (  # type: ignore[misc]
                    table.counter_at("a", "inflight", m),
                    table.counter_at("a", "inflight", m - 1),
                ),
                lambda seen: seen == (1, 0),
                f"the in-flight count moved into minute {minute - start}",
            )
            # What least-busy reads: the current and previous bucket hold exactly one.
            assert table.counter_at("a", "requests", start) == 1
    # The client left: the count is released where it was held, nowhere else.
    table.wait_inflight_zero("a")
    assert table.counter_at("a", "inflight", start + 3) == 0
    assert table.counter_at("a", "inflight", start) == 0


WORDS = 600  # the mock answers one token a word
UNLIMITED = {"model": "fast-chat", "messages": [{"role": "user", "content": "Go"}]}
SMALL_TPM = 3000


def test_answers_to_requests_without_max_tokens_stay_within_the_tpm_limit_in_a_burst(
    start_gateway: Callable[..., Any], clock: FleetClock, make_upstream: Any
) -> None:
    upstream = make_upstream("long", default_content="w " * WORDS)
    upstream.set_faults([], persistent={"obey_max_tokens": True})
    gw = start_gateway(config(deployment("a", upstream, tpm_limit=SMALL_TPM)))
    _fresh_minute(clock)

    async def burst() -> list[httpx.Response]:
        async with httpx.AsyncClient(timeout=30) as http:
            url = gw.base_url + "/v1/chat/completions"
            return list(await asyncio.gather(*(http.post(url, json=UNLIMITED) for _ in range(12))))

    answers = asyncio.run(burst())
    assert {a.status_code for a in answers} <= {200, 429}
    served = [a.json() for a in answers if a.status_code == 200]
    assert served
    # Each reserved 258 tokens and answered 609 before: 11 admitted, 6,699 tokens.
    assert sum(s["usage"]["total_tokens"] for s in served) <= SMALL_TPM
    calls = [r["body"] for r in upstream.requests() if r["path"] == "/v1/chat/completions"]
    assert len(calls) == len(served)
    assert all(isinstance(body.get("max_tokens"), int) for body in calls)


def test_sequential_answers_without_max_tokens_end_at_the_limit_then_429(
    start_gateway: Callable[..., Any], clock: FleetClock, make_upstream: Any, table: TableView
) -> None:
    upstream = make_upstream("long", default_content="w " * WORDS)
    upstream.set_faults([], persistent={"obey_max_tokens": True})
    gw = start_gateway(config(deployment("a", upstream, tpm_limit=SMALL_TPM)))
    minute = _fresh_minute(clock)
    used, completions, finishes = 0, [], []
    for _ in range(12):
        answer = httpx.post(gw.base_url + "/v1/chat/completions", json=UNLIMITED, timeout=30)
        if answer.status_code != 200:
            break
        body = answer.json()
        used += body["usage"]["total_tokens"]
        completions.append(body["usage"]["completion_tokens"])
        finishes.append(body["choices"][0]["finish_reason"])
        # The next request plans on this one's real usage (the reservation reconciled).
        wait_for(
            lambda: table.counter_at("a", "reserved_tokens", minute),
            lambda seen, expected=used: seen == expected,  # type: ignore[misc]
            "the reservation reconciled",
        )
    assert answer.status_code == 429
    assert used <= SMALL_TPM
    assert completions[:3] == [WORDS] * 3  # room to spare: the whole answer
    assert finishes[:3] == ["stop"] * 3
    assert finishes[-1] == "length"  # the last ones were cut to what the minute had left
    sent = [r["body"]["max_tokens"] for r in upstream.requests() if r["method"] == "POST"]
    assert sent[0] == (SMALL_TPM - 2) // 2  # half the minute, after the 2-token prompt
