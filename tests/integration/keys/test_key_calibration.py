"""A key's reservations learn each deployment's real prompt counts (``routing.calibration``).

The mock upstream counts the serialized messages (``mock_answers.prompt_tokens``):
for many short messages that is about 1.5 times the gateway's conservative
bound (``routing.estimates.tokens.prompt_bound``). Uncalibrated, 32 concurrent
requests of that shape with ``max_tokens: 1`` would each reserve the bound
and be counted half as much again: about 1,440 tokens against a tpm limit of
1,000. Once one answer has reported its count, the process reserves the
calibrated bound and the limit holds.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import httpx

from edgeproxy.routing.estimates.calibration import scaled
from edgeproxy.routing.estimates.tokens import prompt_bound
from edgeproxy_dev.mock_upstream import MockUpstream
from tests.fixtures.clock import FleetClock
from tests.fixtures.configs import config, deployment
from tests.integration.keys.helpers import ENV, bearer, create_key

CALLERS = 32
LIMIT = 1000
MANY = [{"role": "user", "content": "x"}] * 12
BODY = {"model": "fast-chat", "messages": MANY, "max_tokens": 1}


def _burst(url: str, key: str) -> list[httpx.Response]:
    async def run() -> list[httpx.Response]:
        limits = httpx.Limits(max_connections=CALLERS)
        async with httpx.AsyncClient(timeout=30, limits=limits) as http:
            calls = (
                http.post(url + "/v1/chat/completions", json=BODY, headers=bearer(key))
                for _ in range(CALLERS)
            )
            return list(await asyncio.gather(*calls))

    return asyncio.run(run())


def test_reservations_follow_the_prompt_counts_the_deployment_reported(
    start_gateway: Callable[..., Any], clock: FleetClock, upstream_a: MockUpstream
) -> None:
    upstream_a.set_faults([], persistent={"obey_max_tokens": True})
    gateway = start_gateway(config(deployment("a", upstream_a)), env=ENV)
    key = create_key(gateway.base_url, name="tpm", tpm_limit=LIMIT)["key"]
    first = httpx.post(
        gateway.base_url + "/v1/chat/completions", json=BODY, headers=bearer(key), timeout=30
    )
    assert first.status_code == 200
    reported = first.json()["usage"]["prompt_tokens"]
    assert reported > 1.4 * prompt_bound(BODY)  # the shape this test is about
    clock.advance(60 - clock.now() % 60 + 1)  # a fresh minute bucket for the burst

    answers = _burst(gateway.base_url, key)
    assert {a.status_code for a in answers} <= {200, 429}
    served = [a.json()["usage"] for a in answers if a.status_code == 200]
    assert served
    # Calibrated from the first answer: each reservation covers what was counted.
    calibrated = scaled(prompt_bound(BODY), reported / prompt_bound(BODY))
    assert all(u["prompt_tokens"] <= calibrated for u in served)
    assert sum(u["total_tokens"] for u in served) <= LIMIT
