"""Shard keys, the shard counts a store remembers, and the sum of a bucket's shard items."""

from __future__ import annotations

import random

from edgeproxy.state import keys
from edgeproxy.state.counter_shards import ShardCounts, summed


def test_shard_zero_is_the_unsharded_bucket() -> None:
    assert keys.usage_shard_key("a", 5, 0) == keys.usage_key("a", 5)
    assert keys.usage_shard_keys("a", 5, 1) == [keys.usage_key("a", 5)]


def test_other_shards_are_partitions_of_their_own() -> None:
    shard_keys = keys.usage_shard_keys("a", 5, 3)
    assert [pk for pk, _ in shard_keys] == ["dep#a", "dep#a#1", "dep#a#2"]
    assert {sk for _, sk in shard_keys} == {keys.usage_sk(5)}


def test_a_shard_cannot_collide_with_another_deployment() -> None:
    # An id containing "#1" is escaped, so it is never shard 1 of "a".
    assert keys.usage_shard_key("a#1", 5, 0) != keys.usage_shard_key("a", 5, 1)


def test_summed_adds_numbers_and_keeps_the_latest_ttl() -> None:
    first = {"pk": {"S": "dep#a"}, "requests": {"N": "3"}, "expires_at": {"N": "100"}}
    second = {"pk": {"S": "dep#a#1"}, "requests": {"N": "4"}, "latency_ms_sum": {"N": "2.5"}}
    third = {"expires_at": {"N": "160"}, "requests": {"N": "1"}}
    total = summed([first, second, third], "expires_at")
    assert total is not None
    assert total["requests"] == {"N": "8"}
    assert total["latency_ms_sum"] == {"N": "2.5"}
    assert total["expires_at"] == {"N": "160"}
    assert total["pk"] == {"S": "dep#a"}


def test_summed_of_nothing_is_none() -> None:
    assert summed([]) is None


def test_a_store_spreads_writes_over_the_count_it_was_given() -> None:
    counts = ShardCounts(random.Random(3))
    assert {counts.pick("a") for _ in range(50)} == {0}  # never told: the one bucket
    counts.note("a", 4)
    assert {counts.pick("a") for _ in range(200)} == {0, 1, 2, 3}
    counts.note("a", 1)
    assert counts.of("a") == 1
