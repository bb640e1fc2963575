"""A deployment's minute bucket on the embedded store: its size over a minute, what its
writes are charged, and whether the fleet simulator's capacity model sees the same."""

from __future__ import annotations

from typing import Any

from bench.fleet.bucket_size import measure
from bench.fleet.capacity import KB, write_units
from bench.fleet.engine import Fleet, Scenario


async def test_a_minute_of_counter_writes_outgrows_one_write_unit(
    dynamo_client: Any, dynamo_endpoint: str
) -> None:
    out = await measure(dynamo_client, dynamo_endpoint, rate=2, seconds=60)
    assert len(out.units) == 2 * 2 * 60  # a start count and an outcome per request
    assert out.sizes[0] < KB
    assert out.units[0] == 1.0
    # Four counters for each second of the minute: past 2 KB by its end, 3 units a write.
    assert out.largest > 2 * KB
    assert out.last_units() == 3.0
    assert 3.0 < out.units_per_request() < 4.0


async def test_the_capacity_model_sizes_the_bucket_as_dynamodb_would(
    dynamo_client: Any, dynamo_endpoint: str
) -> None:
    out = await measure(dynamo_client, dynamo_endpoint, rate=2, seconds=60)
    # The model adds floats where DynamoDB adds decimals (38 digits): a long sum keeps
    # a few more digits in DynamoDB, so the model may be a little under, never far.
    for real, modelled in zip(out.sizes, out.modelled, strict=True):
        assert abs(real - modelled) <= max(8, real // 50), (real, modelled)
    before = [0, *out.modelled[:-1]]
    charged = [write_units(b, a) for b, a in zip(before, out.modelled, strict=True)]
    differ = sum(m != r for m, r in zip(charged, out.units, strict=True))
    assert differ <= len(out.units) // 50, differ  # only writes at a KB boundary
    assert out.sizes[-1] > 2 * KB
    assert out.modelled[-1] > 2 * KB


async def test_the_simulated_fleet_grows_the_bucket_the_gateway_grows(
    dynamo_client: Any, dynamo_endpoint: str
) -> None:
    # The simulator's workload: an rpm limit only, 50-150 ms answers, every second busy.
    scenario = Scenario(rate=5, seconds=60, shards=1, rpm_limit=10**6)
    simulated = Fleet(scenario).run()
    real = await measure(dynamo_client, dynamo_endpoint, rate=5, latency_s=(0.05, 0.15), tpm=False)
    assert abs(simulated.largest_item - real.largest) <= real.largest * 0.03, (
        simulated.largest_item,
        real.largest,
    )
    per_request = simulated.write_units / simulated.admitted
    assert abs(per_request - real.units_per_request()) <= 0.15, (
        per_request,
        real.units_per_request(),
    )
