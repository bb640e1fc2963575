"""The fleet simulator's capacity model and a tiny virtual-time run."""

from __future__ import annotations

import pytest
from bench.fleet.capacity import (
    ITEM_LIMIT,
    CapacityModel,
    ItemTooLarge,
    attribute_size,
    item_size,
    number_size,
    read_units,
    wire_item_size,
    write_units,
)
from bench.fleet.engine import Fleet, Scenario
from bench.fleet.table import SimTable, Throttled
from bench.fleet.team_load import TeamFleet, TeamScenario, team_rows

HOT = ("dep#hot", "usage#0000000001")


def test_units_follow_dynamodb_sizes() -> None:
    assert write_units(0, 10) == 1.0
    assert write_units(1024, 1025) == 2.0  # the larger size, per started KB
    assert read_units(0) == 0.5  # a key that finds nothing still costs the minimum
    assert read_units(4097) == 1.0
    assert attribute_size("requests", 12345.0) == len("requests") + 4
    assert item_size(("ab", "c"), {"x": "yz"}) == len("pk") + 2 + len("sk") + 1 + 1 + 2


def test_numbers_are_sized_by_their_significant_digits() -> None:
    # AWS's rule (developer guide, "DynamoDB item sizes and formats"): 1 byte per two
    # significant digits, leading and trailing zeroes trimmed, plus 1; at most 38 digits.
    assert number_size("7") == 2
    assert number_size("12") == 2
    assert number_size("123") == 3
    assert number_size("1000") == 2  # trailing zeroes trimmed: one significant digit
    assert number_size(100.0) == 2  # a float's ".0" is no digit either
    assert number_size("0.00125") == 3  # leading zeroes trimmed: 125
    assert number_size("-4.50") == 2  # the sign is no digit: 45
    assert number_size("0") == 2
    assert number_size("153.84615384615384") == 10  # a throughput sum: 17 digits
    assert number_size("1" * 38) == 20
    assert number_size("1" * 40) == 20  # DynamoDB keeps at most 38


def test_a_wire_item_is_its_names_and_values() -> None:
    item = {
        "pk": {"S": "dep#busy"},
        "sk": {"S": "usage#29500000"},
        "requests": {"N": "120"},
        "s07t": {"N": "153.84615384615384"},
    }
    expected = (2 + 8) + (2 + 14) + (8 + 2) + (4 + 10)  # "120": two significant digits
    assert wire_item_size(item) == expected
    with pytest.raises(ValueError, match="BOOL"):
        wire_item_size({"flag": {"BOOL": True}})  # type: ignore[dict-item]


def test_a_partition_serves_1000_write_units_a_second() -> None:
    model = CapacityModel(partitions=1, burst_s=1.0)
    taken = sum(model.charge(HOT, 1.0, 0.0, write=True) for _ in range(1500))
    assert taken == 1000
    assert model.charge(HOT, 1.0, 0.5, write=True)  # half a second refills 500
    assert sum(model.charge(HOT, 1.0, 0.5, write=True) for _ in range(600)) == 499


def test_reads_and_writes_throttle_apart() -> None:
    model = CapacityModel(partitions=1)
    assert sum(model.charge(HOT, 1.0, 0.0, write=False) for _ in range(3500)) == 3000
    assert model.charge(HOT, 1.0, 0.0, write=True)


def test_a_partition_throttling_long_enough_splits_but_one_item_never_does() -> None:
    model = CapacityModel(partitions=1, split_after_s=2.0)
    other = ("dep#hot#1", "usage#0000000001")
    for step in range(400):  # 4 s of twice one partition's write rate on two items
        now = step / 100
        for key in (HOT, other):
            for _ in range(10):
                model.charge(key, 1.0, now, write=True)
    assert model.splits == 1
    assert model.partition_of(HOT) is not model.partition_of(other)
    alone = CapacityModel(partitions=1, split_after_s=2.0)
    for step in range(400):
        for _ in range(20):
            alone.charge(HOT, 1.0, step / 100, write=True)
    assert alone.splits == 0


def test_the_table_refuses_an_item_over_400_kb_and_charges_a_failed_condition() -> None:
    table = SimTable(CapacityModel(partitions=1, burst_s=1000.0))
    assert table.add(HOT, {"requests": 1}, 0.0, below=("requests", 1))
    assert not table.add(HOT, {"requests": 1}, 0.0, below=("requests", 1))
    assert table.counts.condition_failures == 1
    assert table.counts.write_units == 2.0
    with pytest.raises(ItemTooLarge):
        table.add(HOT, {f"a{i:06d}": 1 for i in range(ITEM_LIMIT // 8)}, 1.0)


def test_a_throttled_write_changes_nothing() -> None:
    table = SimTable(CapacityModel(partitions=1, burst_s=0.001))
    assert table.add(HOT, {"requests": 1}, 0.0)
    with pytest.raises(Throttled):
        table.add(HOT, {"requests": 1}, 0.0)
    assert table.item(HOT) == {"requests": 1.0}


def test_a_tiny_fleet_admits_exactly_and_sharding_ends_the_throttling() -> None:
    base = {"rate": 1000.0, "seconds": 3.0, "rpm_limit": 2100}
    one = Fleet(Scenario(shards=1, **base)).run()  # type: ignore[arg-type]
    four = Fleet(Scenario(shards=8, **base)).run()  # type: ignore[arg-type]
    for run in (one, four):
        assert run.admitted <= 2100
        assert run.counted == run.admitted  # the shards hold exactly what was admitted
        assert run.peak_instances > 50  # one request per instance at a time
    assert four.admitted == 2100  # the limit, exactly
    assert four.throttles == 0
    assert one.throttles > 0  # two writes a request on one item: past 1,000 units a second
    assert four.condition_failures > 0  # borrows at the end of the allowances


def test_the_sharded_log_holds_10000_requests_a_second_where_one_partition_cannot() -> None:
    from bench.fleet.log_load import run as log_run

    from edgeproxy.state import usage_log as layout

    sharded = log_run(10_000, 0.6, layout.LOG_SHARDS, 64)
    assert sharded.offered > 5000
    assert (sharded.lost_records, sharded.lost_aggregates, sharded.throttles) == (0, 0, 0)
    assert sharded.write_units / sharded.offered == 2.0  # one record, one ADD: a unit each
    one = log_run(10_000, 0.6, 1, 64)
    assert one.lost_records > 0
    assert one.lost_aggregates > 0


def test_a_hot_team_is_capped_by_one_item_and_not_by_shards() -> None:
    one = TeamFleet(TeamScenario(rate=1000, seconds=1.5, shards=1)).run()
    eight = TeamFleet(TeamScenario(rate=1000, seconds=1.5, shards=8)).run()
    limit = one.scenario.rpm_limit
    # One item: 4 write units a request on one partition; throttled into 503s below the limit.
    assert one.store_errors > 0
    assert one.admitted < limit
    # Eight shards: the limit exactly, no 503, every admission counted once.
    assert eight.store_errors == 0
    assert eight.admitted == eight.counted == limit
    assert eight.refused_at_limit > 0
    assert len(team_rows([one, eight])) == 4
