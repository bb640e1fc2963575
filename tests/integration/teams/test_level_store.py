"""The levels above a key on the real store: what a request costs in store calls, what it
counts, and what settles.

A key without a team makes no call; a key in a team (its team and organization read once
into the cache) costs one TransactWriteItems at admission and, at settlement, one
TransactWriteItems plus one UpdateItem per budget sent together (one round trip).
"""

from __future__ import annotations

import random
from collections import Counter
from typing import Any

import pytest

from edgeproxy.config.loader import parse_config
from edgeproxy.config.models import GatewayConfig
from edgeproxy.config.policies import Operation
from edgeproxy.errors import QuotaExceeded, RateLimited
from edgeproxy.routing.access import ClientKey
from edgeproxy.routing.hierarchy import EndUserLimits, Group, Level
from edgeproxy.service.admin import audit
from edgeproxy.service.limits.calibrations import Calibrations
from edgeproxy.service.limits.levels import Levels
from edgeproxy.service.request import ProxyRequest, Tally
from edgeproxy.state.dynamodb.dynamo import DynamoStore
from edgeproxy.state.dynamodb.dynamo_levels import level_spend_key, level_usage_key
from edgeproxy.state.dynamodb.schema import TableSchema
from edgeproxy.state.items import get_float, get_int

NOW = 1_800_000_000.0 + 5  # five seconds into a minute
PRICE = 1_000_000.0  # $1 a token


class Counting:
    """The store's client, counting each call by operation."""

    def __init__(self, client: Any) -> None:
        self._client = client
        self.calls: Counter[str] = Counter()

    def __getattr__(self, operation: str) -> Any:
        call = getattr(self._client, operation)

        async def counted(**kwargs: Any) -> Any:
            self.calls[operation] += 1
            return await call(**kwargs)

        return counted


def _config() -> GatewayConfig:
    dep = {
        "id": "a",
        "model": "fast-chat",
        "provider": "openai_compat",
        "base_url": "http://127.0.0.1:9",
        "upstream_model": "m",
        "credential": "env:X",
        "input_price_per_mtok": PRICE,
        "output_price_per_mtok": PRICE,
    }
    return parse_config({"deployments": [dep]}, "test", entry=False)


def _request(key: ClientKey, n: int, end_user: str | None = "alice") -> ProxyRequest:
    body = {"model": "fast-chat", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 5}
    return ProxyRequest(
        Operation.CHAT, "fast-chat", body, "c", f"req-{n}", key=key, end_user=end_user
    )


@pytest.fixture
def counting(dynamo_client: Any) -> Counting:
    return Counting(dynamo_client)


@pytest.fixture
def counted_store(counting: Counting, table_name: str, table_schema: TableSchema) -> DynamoStore:
    return DynamoStore(counting, table_name, table_schema, random.Random(0))


async def _groups(store: DynamoStore) -> None:
    org = Group(Level.ORGANIZATION, "acme", "Acme", budget_usd=1000.0)
    team = Group(
        Level.TEAM,
        "search",
        "Search",
        parent="acme",
        rpm_limit=3,
        tpm_limit=10_000,
        max_parallel_requests=4,
        budget_usd=500.0,
        end_user_limits=EndUserLimits(budget_usd=100.0),
    )
    for group in (org, team):
        assert await store.create_group(group, audit.entry("t", "create", group.id, [], NOW))


async def test_a_team_costs_one_round_trip_each_way_and_a_teamless_key_nothing(
    counted_store: DynamoStore, counting: Counting
) -> None:
    store = counted_store
    await _groups(store)
    levels = Levels(store, lambda: NOW, random.Random(7))
    config, calibrations = _config(), Calibrations()

    counting.calls.clear()
    alone = ClientKey("0123456789abcdef00", "alone")
    assert await levels.reserve(_request(alone, 0), config, calibrations, NOW) is None
    assert counting.calls == Counter()

    member = ClientKey("fedcba987654321000", "member", team_id="search")
    first = await levels.reserve(_request(member, 1), config, calibrations, NOW)
    assert first is not None
    assert counting.calls == Counter({"get_item": 2, "transact_write_items": 1})  # cache filled
    counting.calls.clear()
    second = await levels.reserve(_request(member, 2), config, calibrations, NOW)
    assert second is not None
    assert counting.calls == Counter({"transact_write_items": 1})
    assert [c.limits.level for c in second.charges] == [
        Level.END_USER,
        Level.TEAM,
        Level.ORGANIZATION,
    ]
    estimate = second.charges[0].tokens
    assert estimate > 0

    counting.calls.clear()
    await first.settle(Tally(tokens=4, spend_usd=4.0))
    # The counts and slots in one transaction; beside it, one ADD per budget (end user, team,
    # organization) that returns the spend for the alerts, all sent at once.
    assert counting.calls == Counter({"transact_write_items": 1, "update_item": 3})
    await second.settle(Tally())  # failed before an answer: the estimate given back

    minute = int(NOW // 60)
    raw = DynamoStore(counting._client, store._table._name, store._schema, random.Random(0))
    team_bucket = await raw._table.call(
        "get_item",
        Key=raw._table.key(level_usage_key("team:search", minute)),
        ConsistentRead=True,
    )
    assert get_int(team_bucket["Item"], "requests") == 2  # both were made
    assert get_int(team_bucket["Item"], "tokens") == 4  # the actual tokens, estimates returned
    for account in ("team:search", "organization:acme", first.charges[0].account):
        spend = await raw._table.call(
            "get_item", Key=raw._table.key(level_spend_key(account)), ConsistentRead=True
        )
        assert get_float(spend["Item"], "spend_usd") == pytest.approx(4.0)


async def test_refusals_name_their_level(store: DynamoStore) -> None:
    await _groups(store)
    clock = [NOW]
    levels = Levels(store, lambda: clock[0], random.Random(3))
    config, calibrations = _config(), Calibrations()
    member = ClientKey("fedcba987654321000", "member", team_id="search")
    held = [
        await levels.reserve(_request(member, n, None), config, calibrations, NOW) for n in range(3)
    ]
    with pytest.raises(RateLimited) as over:
        await levels.reserve(_request(member, 3, None), config, calibrations, NOW)
    assert "team `search`" in over.value.message
    assert "requests per minute" in over.value.message
    assert over.value.retry_after == pytest.approx(55.0)
    for hold in held:
        assert hold is not None
        await hold.settle(Tally())

    # The end user's budget ($100): one answer spent $100, the next is refused at that level.
    later = NOW + 60
    hold = await levels.reserve(_request(member, 4), config, calibrations, later)
    assert hold is not None
    await hold.settle(Tally(tokens=100, spend_usd=100.0))
    with pytest.raises(QuotaExceeded) as spent:
        await levels.reserve(_request(member, 5), config, calibrations, later)
    assert "level end_user" in spent.value.message
    assert "alice" not in spent.value.message  # the client's own value is not echoed
    # Another end user of the same team has its own budget.
    other = await levels.reserve(_request(member, 6, "bob"), config, calibrations, later)
    assert other is not None
    await other.settle(Tally())


async def test_a_full_team_refuses_parallel_and_a_lapsed_slot_frees_itself(
    store: DynamoStore,
) -> None:
    await _groups(store)
    levels = Levels(store, lambda: NOW, random.Random(5))
    config, calibrations = _config(), Calibrations()
    member = ClientKey("fedcba987654321000", "member", team_id="search")
    # rpm 3 in a minute: spread the four holders over two minutes.
    held = [
        await levels.reserve(_request(member, n, None), config, calibrations, NOW + 60 * (n // 2))
        for n in range(4)
    ]
    assert all(h is not None for h in held)
    later = NOW + 120
    with pytest.raises(RateLimited) as full:
        await levels.reserve(_request(member, 9, None), config, calibrations, later)
    assert "max_parallel_requests: 4" in full.value.message
    assert "team `search`" in full.value.message
    # No release ever comes (a process died): every slot lapses at its lease's end.
    lease = max(h.until for h in held if h is not None)
    hold = await levels.reserve(_request(member, 10, None), config, calibrations, lease + 0.001)
    assert hold is not None
