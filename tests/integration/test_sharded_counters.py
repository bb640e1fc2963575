"""Sharded usage buckets on the embedded DynamoDB: exact limits, spread writes, summed reads.

Two ``DynamoStore`` instances on one table stand for two gateway processes
(each with its own shard choice); ``test_sharded_admission`` repeats the
race through real gateway processes.
"""

from __future__ import annotations

import asyncio
import random
from typing import Any

from edgeproxy.config.loader import from_document, parse_config, to_document
from edgeproxy.jobs.health import HealthJob
from edgeproxy.routing.allowance import allowance
from edgeproxy.service.admin.status_view import history
from edgeproxy.state import items, keys
from edgeproxy.state.dynamodb.dynamo import DynamoStore
from edgeproxy.state.dynamodb.schema import TableSchema
from edgeproxy.state.store import SnapshotRequest, UsageDelta
from tests.fixtures.configs import LOOPBACK

NOW = 1_700_000_000.0
MINUTE = int(NOW // 60)
LATER = NOW + 3600
SHARDS = 4


def _twin(dynamo_client: Any, table_name: str, schema: TableSchema) -> list[DynamoStore]:
    """Two stores on one table (two processes'), each drawing its shards from its own seed."""
    return [DynamoStore(dynamo_client, table_name, schema, random.Random(s)) for s in (7, 8)]


async def _shard_counts(store: DynamoStore, name: str, shards: int = SHARDS) -> list[int]:
    found = await store._table.batch_get(keys.usage_shard_keys("d1", MINUTE, shards))
    return [
        items.get_int(found.get(k, {}), name) for k in keys.usage_shard_keys("d1", MINUTE, shards)
    ]


async def test_an_rpm_limit_holds_exactly_across_shards_under_concurrency(
    store: DynamoStore, dynamo_client: Any, table_name: str, table_schema: TableSchema
) -> None:
    stores = _twin(dynamo_client, table_name, table_schema)
    limit = 17  # allowances 5, 4, 4, 4: some shards run dry first, the rest is borrowed
    results = await asyncio.gather(
        *(stores[i % 2].admit("d1", MINUTE, limit, LATER, shards=SHARDS) for i in range(60))
    )
    assert results.count(True) == limit
    per_shard = await _shard_counts(store, "requests")
    assert sum(per_shard) == limit
    assert per_shard == [allowance(limit, SHARDS, s) for s in range(SHARDS)]
    assert not await store.admit("d1", MINUTE, limit, LATER, shards=SHARDS)


async def test_exactly_the_limit_offered_at_once_is_all_admitted(
    dynamo_client: Any, table_name: str, table_schema: TableSchema
) -> None:
    # No under-admission: random start shards fill unevenly, and the borrows even it out.
    stores = _twin(dynamo_client, table_name, table_schema)
    limit = 40
    results = await asyncio.gather(
        *(stores[i % 2].admit("d1", MINUTE, limit, LATER, shards=SHARDS) for i in range(limit))
    )
    assert results.count(True) == limit


async def test_a_limit_below_the_shard_count_still_admits_all_of_it(store: DynamoStore) -> None:
    results = [await store.admit("d1", MINUTE, 2, LATER, shards=SHARDS) for _ in range(6)]
    assert results == [True, True, False, False, False, False]


def tpm_fragmentation_bound(shards: int, reserve: int) -> int:
    """Tokens of room a sharded tpm limit may leave unused beyond one item's refusal point:
    each shard but one may stop up to ``reserve - 1`` tokens short of its allowance."""
    return (shards - 1) * max(0, reserve - 1)


async def test_a_tpm_limit_across_shards_stays_within_its_stated_bound(store: DynamoStore) -> None:
    limit, reserve, shards = 1000, 100, 3  # allowances 334, 333, 333: three reservations each
    results = await asyncio.gather(
        *(
            store.admit("d1", MINUTE, None, LATER, tpm_limit=limit, reserve=reserve, shards=shards)
            for _ in range(20)
        )
    )
    admitted = results.count(True) * reserve
    assert admitted <= limit
    assert admitted >= limit - reserve + 1 - tpm_fragmentation_bound(shards, reserve)
    assert sum(await _shard_counts(store, "reserved_tokens", shards)) == admitted


async def test_outcomes_spread_over_the_shards_and_reads_sum_them(store: DynamoStore) -> None:
    for _ in range(SHARDS * 3):
        assert await store.admit("d1", MINUTE, None, LATER, shards=SHARDS)
    for _ in range(40):
        await store.record(UsageDelta("d1", MINUTE, inflight=-1, successes=1), LATER)
    assert sum(1 for n in await _shard_counts(store, "successes") if n) > 1

    request = SnapshotRequest(
        "p", ["d1"], [], MINUTE, previous_minute=False, shards=(("d1", SHARDS),)
    )
    usage = (await store.read_pool(request)).usage_of("d1", MINUTE)
    assert (usage.requests, usage.successes, usage.inflight) == (SHARDS * 3, 40, SHARDS * 3 - 40)
    (bucket,) = await store.read_usage("d1", MINUTE, MINUTE, SHARDS)
    assert (bucket.requests, bucket.successes) == (SHARDS * 3, 40)
    # A reader that does not know the shards sees only shard 0: what the sum adds.
    (alone,) = await store.read_usage("d1", MINUTE, MINUTE)
    assert alone.successes < 40


async def test_one_shard_keeps_the_unsharded_layout(store: DynamoStore) -> None:
    assert await store.admit("d1", MINUTE, 5, LATER)
    await store.record(UsageDelta("d1", MINUTE, successes=1), LATER)
    found = await store._table.batch_get([keys.usage_key("d1", MINUTE)])
    item = found[keys.usage_key("d1", MINUTE)]
    assert (items.get_int(item, "requests"), items.get_int(item, "successes")) == (1, 1)


def _sharded_config() -> str:
    dep = {
        "id": "d1",
        "model": "m",
        "provider": "openai_compat",
        "base_url": "http://127.0.0.1:9",
        "upstream_model": "m",
        "counter_shards": SHARDS,
    }
    return to_document(
        parse_config({"deployments": [dep], "gateway": {"egress": {"allow": LOOPBACK}}}, "test")
    )


async def _spread_successes(store: DynamoStore, count: int) -> None:
    # A fresh store (another process) learns the shard count from the admission it makes.
    assert await store.admit("d1", MINUTE, None, LATER, shards=SHARDS)
    for _ in range(count):
        await store.record(UsageDelta("d1", MINUTE, successes=1, latency_ms_sum=100), LATER)
    assert sum(1 for n in await _shard_counts(store, "successes") if n) > 1


async def test_the_health_job_and_the_status_history_sum_the_shards(
    dynamo_client: Any, table_name: str, table_schema: TableSchema
) -> None:
    writer, reader = _twin(dynamo_client, table_name, table_schema)
    await _spread_successes(writer, 30)
    assert await reader.save_config(_sharded_config(), 0) == 1

    (health,) = await HealthJob(reader, lambda: NOW).run()
    assert health.samples == 30
    stored = await reader.load_config()
    assert stored is not None
    view = await history(reader, from_document(stored.document), "m", minutes=1, now=NOW)
    assert view["deployments"][0]["successes"] == [30]
    assert view["deployments"][0]["requests"] == [1]


async def test_a_reservation_over_a_shards_part_still_fits_an_empty_shard(
    store: DynamoStore,
) -> None:
    # As one item admits an estimate over the whole limit into an empty minute only.
    args = {"tpm_limit": 1000, "reserve": 400, "shards": SHARDS}  # parts of 250
    assert await store.admit("d1", MINUTE, None, LATER, **args)  # type: ignore[arg-type]
    assert sum(await _shard_counts(store, "reserved_tokens")) == 400
