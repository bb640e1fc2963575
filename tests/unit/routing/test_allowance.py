"""Per-shard allowances: they split a limit exactly, and a probe visits every shard once."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from edgeproxy.routing.allowance import allowance, probe_order


@given(st.integers(0, 100_000), st.integers(1, 32))
def test_the_allowances_sum_to_the_limit(limit: int, shards: int) -> None:
    parts = [allowance(limit, shards, s) for s in range(shards)]
    assert sum(parts) == limit
    assert max(parts) - min(parts) <= 1  # an even split: no shard runs dry long before another


def test_the_remainder_goes_to_the_first_shards() -> None:
    assert [allowance(10, 4, s) for s in range(4)] == [3, 3, 2, 2]
    assert [allowance(2, 4, s) for s in range(4)] == [1, 1, 0, 0]


def test_one_shard_holds_the_whole_limit() -> None:
    assert allowance(7, 1, 0) == 7


@pytest.mark.parametrize(("shards", "shard"), [(0, 0), (4, 4), (4, -1)])
def test_a_shard_outside_the_count_is_an_error(shards: int, shard: int) -> None:
    with pytest.raises(ValueError, match="shard"):
        allowance(10, shards, shard)


@given(st.integers(1, 32), st.data())
def test_a_probe_visits_every_shard_once_from_its_start(shards: int, data: st.DataObject) -> None:
    start = data.draw(st.integers(0, shards - 1))
    order = probe_order(shards, start)
    assert order[0] == start
    assert sorted(order) == list(range(shards))
