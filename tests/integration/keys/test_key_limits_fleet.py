"""A key's tpm limit and budget hold under 64 concurrent callers on two gateway processes.

Before reservations, each request checked the key's counters alone and
all 64 passed: 1,024 tokens against a tpm limit of 100, $960 against a
budget of $100. Now each reserves its estimate with a conditional write
first. Every mock answer here uses fewer tokens than its estimate
(``max_tokens`` bounds the output), so the limits hold exactly.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import httpx

from edgeproxy.routing.estimates.tokens import prompt_bound
from edgeproxy.state import keys
from edgeproxy.state.items import get_float, get_int
from edgeproxy_dev.mock_upstream import MockUpstream
from tests.fixtures.clock import FleetClock
from tests.fixtures.configs import config, deployment
from tests.fixtures.table import TableView, wait_for
from tests.integration.keys.helpers import ENV, HELLO, bearer, create_key

CALLERS = 64
BODY = {"model": "fast-chat", "messages": HELLO, "max_tokens": 20}  # estimate: 10 + 20 tokens
PRICE = 1_000_000.0  # $1 a token, in and out: an answer of ~16 tokens costs ~$16


def burst(urls: list[str], key: str, body: dict[str, Any] = BODY) -> list[httpx.Response]:
    async def run() -> list[httpx.Response]:
        limits = httpx.Limits(max_connections=CALLERS)
        async with httpx.AsyncClient(timeout=30, limits=limits) as http:
            calls = (
                http.post(urls[i % 2] + "/v1/chat/completions", json=body, headers=bearer(key))
                for i in range(CALLERS)
            )
            return list(await asyncio.gather(*calls))

    return asyncio.run(run())


def limited_keys_on_two_processes(
    spawn_gateway: Callable[..., Any],
    start_gateway: Callable[..., Any],
    clock: FleetClock,
    upstream_a: MockUpstream,
) -> tuple[list[str], dict[str, Any], dict[str, Any]]:
    """Two gateway processes over ``a`` ($1 a token), a key with tpm 100 and one with a $100
    budget; the clock early enough in its minute that a burst stays inside one bucket."""
    cfg = config(
        deployment("a", upstream_a, input_price_per_mtok=PRICE, output_price_per_mtok=PRICE)
    )
    remote = spawn_gateway(cfg, env=ENV)
    local = start_gateway(cfg, env=ENV)
    tpm = create_key(local.base_url, name="tpm", tpm_limit=100)
    budget = create_key(local.base_url, name="budget", budget_usd=100)
    into = clock.now() % 60
    if into > 30:
        clock.advance(60 - into + 1)
    return [remote.base_url, local.base_url], tpm, budget


def served_tokens(upstream: MockUpstream, answers: list[httpx.Response]) -> int:
    return sum(a.json()["usage"]["total_tokens"] for a in answers if a.status_code == 200)


def test_tpm_limit_and_budget_hold_under_64_callers_on_two_processes(
    spawn_gateway: Callable[..., Any],
    start_gateway: Callable[..., Any],
    clock: FleetClock,
    upstream_a: MockUpstream,
    table: TableView,
) -> None:
    urls, tpm, budget = limited_keys_on_two_processes(
        spawn_gateway, start_gateway, clock, upstream_a
    )

    answers = burst(urls, tpm["key"])
    statuses = [a.status_code for a in answers]
    assert set(statuses) <= {200, 429}
    # Each reservation takes 30 of the 100; an answer that used less gives the rest back when
    # it is counted, which may let one more in during the burst: the limit is on tokens.
    assert 1 <= statuses.count(200) < len(statuses)
    assert served_tokens(upstream_a, answers) <= 100
    # Once every answer was counted and every reservation released: the actual tokens, exactly.
    minute = int(clock.now() // 60)
    bucket = keys.key_usage_key(tpm["id"], minute)
    total = served_tokens(upstream_a, answers)
    wait_for(lambda: get_int(table.item(bucket), "tokens"), lambda t: t == total, "tokens settled")

    spent_answers = burst(urls, budget["key"])
    codes = {a.json()["error"]["code"] for a in spent_answers if a.status_code == 429}
    assert codes <= {"insufficient_quota"}
    served = [a for a in spent_answers if a.status_code == 200]
    assert 1 <= len(served) < len(spent_answers)  # the bound is on spend, as above on tokens
    assert served_tokens(upstream_a, served) * 1.0 <= 100.0  # $1 a token
    cost = float(served_tokens(upstream_a, served))
    spend = keys.key_spend_key(budget["id"])
    settled = wait_for(
        lambda: get_float(table.item(spend), "spend_usd"), lambda s: abs(s - cost) < 1e-6, "spend"
    )
    assert settled <= 100.0


TINY = {"model": "fast-chat", "messages": HELLO, "max_tokens": 1}


def test_limits_hold_when_every_caller_asks_for_one_output_token(
    spawn_gateway: Callable[..., Any],
    start_gateway: Callable[..., Any],
    clock: FleetClock,
    upstream_a: MockUpstream,
) -> None:
    """``max_tokens: 1`` once took a tpm 100 key to 360 tokens: each reserved a ~3-token
    prompt estimate against an 11-token prompt. The bound now (README, "Client keys"):

        tokens <= tpm_limit + sum over answers of (reported prompt - calibrated bound)+
                            + (completion - max_tokens)+

    where the second sum is 0 for an upstream that obeys ``max_tokens`` (this one does).
    """
    upstream_a.set_faults([], persistent={"obey_max_tokens": True})
    urls, tpm, budget = limited_keys_on_two_processes(
        spawn_gateway, start_gateway, clock, upstream_a
    )

    def bound(limit: float, answers: list[httpx.Response]) -> float:
        served = [a.json()["usage"] for a in answers if a.status_code == 200]
        missed = sum(max(0, u["prompt_tokens"] - prompt_bound(TINY)) for u in served)
        beyond = sum(max(0, u["completion_tokens"] - 1) for u in served)
        return limit + missed + beyond

    answers = burst(urls, tpm["key"], TINY)
    assert {a.status_code for a in answers} <= {200, 429}
    assert 200 in {a.status_code for a in answers}
    assert served_tokens(upstream_a, answers) <= bound(100, answers)

    spent = burst(urls, budget["key"], TINY)
    assert {a.status_code for a in spent} <= {200, 429}
    assert served_tokens(upstream_a, spent) * 1.0 <= bound(100.0, spent)  # $1 a token
