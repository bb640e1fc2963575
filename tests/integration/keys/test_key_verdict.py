"""A key's verdict, its writes made on the real (moto) table: rpm, tpm and budget at one moment.

``routing.judge`` names the writes; ``service.limits.enforcement`` makes them
in order (as the gateway does), and the first whose condition fails is refused with the judge's
reason. What the earlier writes counted stays as it was when each had its
own moment: an rpm count stands, a token reservation is undone when the
spend is refused, and nothing after a refused write is counted.
"""

from __future__ import annotations

import random
from dataclasses import replace
from typing import Any

import pytest

from edgeproxy.config.roles import Role
from edgeproxy.errors import QuotaExceeded, RateLimited
from edgeproxy.routing.access import ClientKey
from edgeproxy.routing.judge.ruling import Estimate, KeySnapshot, judge
from edgeproxy.service.limits.enforcement import (
    Reservation,
    count_request,
    planned,
    reserve_usage,
)
from edgeproxy.state.dynamodb.dynamo import DynamoStore
from edgeproxy.state.dynamodb.schema import TableSchema
from edgeproxy_dev.clock import Clock

KEY = ClientKey("c" * 64, "limited", Role.FREE)
ESTIMATE = Estimate(tokens=80, spend_usd=0.004)


@pytest.fixture
def store(dynamo_client: Any, table_name: str, table_schema: TableSchema) -> DynamoStore:
    return DynamoStore(dynamo_client, table_name, table_schema, random.Random(0))


async def _admit(store: DynamoStore, key: ClientKey, now: float) -> Reservation | None:
    """The gateway's order: the verdict, its rpm count, then its reservations."""
    plan = planned(judge(KeySnapshot(key, "fast-chat", ("fast-chat",), ESTIMATE), now))
    await count_request(store, plan, key, now)
    return await reserve_usage(store, plan, key, now)


async def test_over_its_rpm_the_request_reserves_no_tokens(
    store: DynamoStore, clock: Clock
) -> None:
    key = replace(KEY, rpm_limit=1, tpm_limit=1000, budget_usd=1.0)
    now = clock.now()
    minute = int(now // 60)
    first = await _admit(store, key, now)
    assert first is not None
    assert (first.minute, first.tokens) == (minute, 80)
    with pytest.raises(RateLimited) as refused:
        await _admit(store, key, now)
    assert "requests per minute" in refused.value.message
    assert refused.value.retry_after == pytest.approx((minute + 1) * 60.0 - now)
    usage = await store.read_key_usage(key.id, minute)
    assert (usage.tokens, usage.spend_usd) == (80, pytest.approx(0.004))


async def test_over_its_tpm_the_request_is_counted_but_reserves_no_spend(
    store: DynamoStore, clock: Clock
) -> None:
    key = replace(KEY, rpm_limit=10, tpm_limit=100, budget_usd=1.0)
    now = clock.now()
    minute = int(now // 60)
    assert await _admit(store, key, now) is not None
    with pytest.raises(RateLimited) as refused:
        await _admit(store, key, now)
    assert "tokens per minute" in refused.value.message
    usage = await store.read_key_usage(key.id, minute)
    assert (usage.tokens, usage.spend_usd) == (80, pytest.approx(0.004))
    # The refused request was counted against rpm 10 (its rpm write came first): 8 more fit.
    untimed = replace(key, tpm_limit=None)
    for _ in range(8):
        assert await _admit(store, untimed, now) is not None
    with pytest.raises(RateLimited, match="requests per minute"):
        await _admit(store, untimed, now)


async def test_over_its_budget_the_tokens_reserved_for_it_are_given_back(
    store: DynamoStore, clock: Clock
) -> None:
    key = replace(KEY, tpm_limit=1000, budget_usd=0.005)
    now = clock.now()
    minute = int(now // 60)
    assert await _admit(store, key, now) is not None
    with pytest.raises(QuotaExceeded) as refused:
        await _admit(store, key, now)
    assert refused.value.body()["error"] == {
        "message": "This API key has used its whole budget.",
        "type": "insufficient_quota",
        "param": None,
        "code": "insufficient_quota",
    }
    usage = await store.read_key_usage(key.id, minute)
    assert (usage.tokens, usage.spend_usd) == (80, pytest.approx(0.004))


async def test_a_key_without_limits_makes_no_write(store: DynamoStore, clock: Clock) -> None:
    now = clock.now()
    assert await _admit(store, KEY, now) is None
    usage = await store.read_key_usage(KEY.id, int(now // 60))
    assert (usage.tokens, usage.spend_usd) == (0, 0.0)
