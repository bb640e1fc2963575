"""The simulator's real-time leg, tiny: many instances with their own clients on the embedded store."""

from __future__ import annotations

import pytest
from bench.fleet.moto_fleet import run_on_moto


@pytest.mark.parametrize("shards", [1, 4])
async def test_a_tiny_fleet_on_the_embedded_store_admits_exactly(
    dynamo_endpoint: str, shards: int
) -> None:
    out = await run_on_moto(
        dynamo_endpoint, rate=60, seconds=1.0, instances=30, shards=shards, rpm_limit=25
    )
    assert out.offered == 60
    assert out.errors == 0
    assert out.admitted == 25
    assert out.counted == 25  # what the shards hold, summed by read_usage
    assert out.refused == 35
    assert out.writes >= 2 * 25  # an admission and an outcome each, plus lost conditions
