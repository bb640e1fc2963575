"""A client key's ``max_parallel_requests`` slots on the real (moto) table, on a movable clock.

A slot whose holder never released it (its process died) lapses at its
deadline and is taken again; a late release frees nothing it no longer
holds; the calls each request adds are counted at the DynamoDB client.
"""

from __future__ import annotations

import random
from collections import Counter
from dataclasses import replace
from typing import Any

import pytest

from edgeproxy.config.models import GatewayConfig
from edgeproxy.config.policies import Operation
from edgeproxy.config.roles import Role
from edgeproxy.errors import RateLimited
from edgeproxy.routing.access import ClientKey
from edgeproxy.routing.judge.reasons import Write
from edgeproxy.routing.judge.ruling import KeyPlan, KeySnapshot, judge
from edgeproxy.service.limits.calibrations import Calibrations
from edgeproxy.service.limits.enforcement import planned
from edgeproxy.service.limits.parallel import GRACE_S, KeyParallel
from edgeproxy.service.limits.reserve import counted
from edgeproxy.service.request import ProxyRequest
from edgeproxy.state.dynamodb.dynamo import DynamoStore
from edgeproxy.state.dynamodb.schema import TableSchema
from edgeproxy_dev.clock import Clock

TOTAL_S = 30.0  # the request's deadline
NOW = 1_750_000_000.0


def _plan(key: ClientKey, routed: bool = True) -> KeyPlan | None:
    """The judge's plan for a request of ``key`` (its slot write named when it is capped)."""
    return planned(judge(KeySnapshot(key, "m", routed=routed), NOW))


CAPPED_KEY = ClientKey("a" * 64, "capped", Role.FREE, max_parallel_requests=2)
CAPPED = _plan(CAPPED_KEY)
UNCAPPED = _plan(ClientKey("b" * 64, "uncapped", Role.FREE))


class CountingClient:
    """The real DynamoDB client; counts each operation the store sends through it."""

    def __init__(self, client: Any) -> None:
        self._client = client
        self.calls: Counter[str] = Counter()

    def __getattr__(self, name: str) -> Any:
        operation = getattr(self._client, name)

        async def counted(**kwargs: Any) -> Any:
            self.calls[name] += 1
            return await operation(**kwargs)

        return counted


@pytest.fixture
def counting(dynamo_client: Any) -> CountingClient:
    return CountingClient(dynamo_client)


@pytest.fixture
def parallel(
    counting: CountingClient, table_name: str, table_schema: TableSchema, clock: Clock
) -> KeyParallel:
    store = DynamoStore(counting, table_name, table_schema, random.Random(0))
    return KeyParallel(store, clock.now, random.Random(7))


async def test_a_slot_whose_holder_died_lapses_at_the_requests_deadline(
    parallel: KeyParallel, clock: Clock
) -> None:
    first = await parallel.take(CAPPED, "r1", TOTAL_S)
    second = await parallel.take(CAPPED, "r2", TOTAL_S)
    assert first is not None
    assert second is not None
    assert {first.index, second.index} == {0, 1}
    with pytest.raises(RateLimited) as refused:
        await parallel.take(CAPPED, "r3", TOTAL_S)
    assert refused.value.code == "rate_limit_exceeded"
    assert refused.value.retry_after == 1.0

    # Neither holder ever releases (their process died). Just before the deadline: still held.
    clock.advance(TOTAL_S + GRACE_S - 1)
    with pytest.raises(RateLimited):
        await parallel.take(CAPPED, "r4", TOTAL_S)
    clock.advance(2)  # past it: both slots lapsed by themselves
    again = [await parallel.take(CAPPED, f"r{i}", TOTAL_S) for i in (5, 6)]
    assert sorted(s.index for s in again if s is not None) == [0, 1]

    # The dead holder's late release frees nothing: the slot is someone else's now.
    await first.release()
    with pytest.raises(RateLimited):
        await parallel.take(CAPPED, "r7", TOTAL_S)


async def test_a_released_slot_is_taken_again_and_released_once(parallel: KeyParallel) -> None:
    held = [await parallel.take(CAPPED, f"r{i}", TOTAL_S) for i in range(2)]
    assert held[0] is not None
    await held[0].release()
    await held[0].release()  # a second release is a no-op, not a free of the next holder's slot
    taken = await parallel.take(CAPPED, "r2", TOTAL_S)
    assert taken is not None
    assert taken.index == held[0].index
    with pytest.raises(RateLimited):
        await parallel.take(CAPPED, "r3", TOTAL_S)


async def test_the_store_calls_a_request_adds(
    parallel: KeyParallel, counting: CountingClient
) -> None:
    assert await parallel.take(UNCAPPED, "r0", TOTAL_S) is None
    assert await parallel.take(None, "r0", TOTAL_S) is None
    # A token count of a capped key is not routed: its plan names no slot.
    assert await parallel.take(_plan(CAPPED_KEY, routed=False), "r0", TOTAL_S) is None
    assert counting.calls == Counter()  # keys without the field: no store call at all

    slot = await parallel.take(CAPPED, "r1", TOTAL_S)  # both slots free: the first try wins
    assert slot is not None
    await slot.release()
    assert counting.calls == Counter({"put_item": 1, "delete_item": 1})

    counting.calls.clear()
    held = [await parallel.take(CAPPED, f"r{i}", TOTAL_S) for i in (2, 3)]
    counting.calls.clear()
    with pytest.raises(RateLimited):
        await parallel.take(CAPPED, "r4", TOTAL_S)
    assert counting.calls == Counter({"put_item": 2})  # refused: one failed write per slot
    assert all(h is not None for h in held)


async def test_the_slot_and_the_rpm_count_are_one_verdict_s_writes(
    parallel: KeyParallel, counting: CountingClient, table_name: str, table_schema: TableSchema
) -> None:
    """The gateway's admission makes the slot write and the rpm count its verdict names,
    in that order; a request its rpm refuses gives its slot back at once."""
    key = replace(CAPPED_KEY, rpm_limit=1)
    store = DynamoStore(counting, table_name, table_schema, random.Random(0))
    config = GatewayConfig.model_validate({"deployments": []})

    def request(request_id: str) -> ProxyRequest:
        return ProxyRequest(Operation.CHAT, "m", {}, "c", request_id, key=key)

    first = await counted(store, parallel, request("r1"), config, Calibrations(), NOW)
    assert first.plan is not None
    assert first.plan.writes == (Write.PARALLEL, Write.RPM)
    assert first.slot is not None
    assert counting.calls == Counter({"put_item": 1, "update_item": 1})

    with pytest.raises(RateLimited) as refused:
        await counted(store, parallel, request("r2"), config, Calibrations(), NOW)
    assert "requests per minute" in refused.value.message
    # The refused request's slot was given back: the cap's second slot is free again.
    again = await parallel.take(first.plan, "r3", TOTAL_S)
    assert again is not None
    assert again.index != first.slot.index
