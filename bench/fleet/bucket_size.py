"""How big a deployment's minute bucket grows, and what each counter write is charged.

A request writes its deployment's usage bucket twice: the start count
(``DynamoStore.admit``) and the outcome (``DynamoStore.record``, with the
second it finished in: four ``s<ss>*`` counters per second of the minute).
This drives the gateway's own store code against the embedded store for one
minute of traffic at a steady rate (the seconds are the minute's, not the
wall clock's, so a minute runs as fast as moto answers), reads the item back
after every write and sizes it by DynamoDB's rule (``capacity.wire_item_size``).
A write is charged per started KB of the larger of the item's sizes before
and after it (``capacity.write_units``).

    python -m bench.fleet.bucket_size            # 1, 10 and 100 requests a second
"""

from __future__ import annotations

import asyncio
import random
import sys
import uuid
from dataclasses import dataclass, field

import aioboto3

from bench.fleet.capacity import KB, CapacityModel, wire_item_size, write_units
from bench.fleet.outcome import outcome
from bench.fleet.table import SimTable
from edgeproxy.aws.dynamodb import DynamoClient
from edgeproxy.clients import store_options
from edgeproxy.settings import Settings
from edgeproxy.state import items, keys
from edgeproxy.state.dynamodb.dynamo import DynamoStore
from edgeproxy_dev import template
from edgeproxy_dev.dynamo_server import EmbeddedDynamo, client_kwargs, create_table

DEPLOYMENT = "busy"
MINUTE = 29_500_000  # any minute: the bucket's key, not the clock
EXPIRES_AT = MINUTE * 60.0 + 3600
RPM_LIMIT = 1_000_000  # limits on, as a limited deployment writes them, never reached
TPM_LIMIT = 1_000_000_000


@dataclass
class BucketSizes:
    """One minute of one rate: every counter write's item size and its write units."""

    rate: int
    seconds: int
    sizes: list[int] = field(default_factory=list)  # after each write, in order
    units: list[float] = field(default_factory=list)  # of each write
    second_end: list[int] = field(default_factory=list)  # the size at each second's end
    modelled: list[int] = field(default_factory=list)  # the capacity model's size, each write

    @property
    def largest(self) -> int:
        """The largest size any counter write left (or found)."""
        return max(self.sizes, default=0)

    def units_per_write(self) -> float:
        """Mean write units of one counter write over the minute."""
        return sum(self.units) / len(self.units)

    def units_per_request(self) -> float:
        """Mean write units of one request's two bucket writes over the minute."""
        return 2 * self.units_per_write()

    def last_units(self) -> float:
        """Write units of the minute's last write."""
        return self.units[-1]


async def measure(
    client: DynamoClient,
    endpoint: str,
    rate: int,
    seconds: int = 60,
    *,
    latency_s: tuple[float, float] = (0.3, 4.0),
    tpm: bool = True,
) -> BucketSizes:
    """One minute (``seconds`` of it) at ``rate`` requests a second on a fresh table.

    Each write is mirrored on the fleet simulator's table (``SimTable``), whose
    sizes land in ``modelled``: the capacity model's view of the same item.
    """
    name = f"bucket-{uuid.uuid4().hex[:8]}"
    schema = create_table(endpoint, name, template.default_template_path())
    store = DynamoStore(client, name, schema, random.Random(0))
    key = keys.usage_key(DEPLOYMENT, MINUTE)
    wire_key = {schema.pk: {"S": key[0]}, schema.sk: {"S": key[1]}}
    sim = SimTable(CapacityModel(partitions=1, burst_s=1e9))
    out, rng, size = BucketSizes(rate, seconds), random.Random(rate), 0

    async def sized(written: dict[str, float]) -> None:
        nonlocal size
        found = await client.get_item(TableName=name, Key=wire_key, ConsistentRead=True)
        after = wire_item_size(found.get("Item", {}))
        out.units.append(write_units(size, after))
        out.sizes.append(after)
        sim.add(key, {schema.ttl: EXPIRES_AT} if not sim.size(key) else {}, 0.0)
        sim.add(key, written, 0.0)
        out.modelled.append(sim.size(key))
        size = after

    for second in range(seconds):
        for _ in range(rate):
            reserve = rng.randint(100, 3000) if tpm else None
            await store.admit(
                DEPLOYMENT,
                MINUTE,
                RPM_LIMIT,
                EXPIRES_AT,
                tpm_limit=TPM_LIMIT if tpm else None,
                reserve=reserve or 0,
            )
            started = {"requests": 1, "inflight": 1, "reserved_tokens": reserve or 0}
            await sized({n: v for n, v in started.items() if v})
            delta = outcome(rng, DEPLOYMENT, MINUTE, second, rng.uniform(*latency_s), reserve)
            await store.record(delta, EXPIRES_AT)
            await sized(items.usage_counters(delta))
        out.second_end.append(size)
    return out


def report(runs: list[BucketSizes]) -> str:
    """A markdown table of the runs."""
    rows = [
        "| requests/s | bucket at 10 s / 30 s / 60 s (bytes) | largest | "
        "write units per counter write (mean, last) | per request (2 writes) |",
        "|---|---|---|---|---|",
    ]
    for r in runs:
        ends = " / ".join(f"{r.second_end[min(s, r.seconds) - 1]:,}" for s in (10, 30, 60))
        rows.append(
            f"| {r.rate} | {ends} | {r.largest:,} ({r.largest / KB:.2f} KB) | "
            f"{r.units_per_write():.2f}, {r.last_units():.0f} | {r.units_per_request():.2f} |"
        )
    return "\n".join(rows)


async def _runs(rates: list[int]) -> list[BucketSizes]:
    with EmbeddedDynamo() as server:
        options = client_kwargs(server.endpoint_url)
        session = aioboto3.Session(
            aws_access_key_id=options["aws_access_key_id"],
            aws_secret_access_key=options["aws_secret_access_key"],
        )
        client = await DynamoClient.open(
            session,
            options["region_name"],
            server.endpoint_url,
            store_options(Settings(store_timeout_seconds=60)),
            random.Random(0).random,
        )
        try:
            return [await measure(client, server.endpoint_url, rate) for rate in rates]
        finally:
            await client.close()


def bucket_runs(rates: list[int]) -> list[BucketSizes]:
    """A minute at each of ``rates`` on a new embedded store (100 req/s: a few minutes)."""
    return asyncio.run(_runs(rates))


if __name__ == "__main__":
    print(report(bucket_runs([int(a) for a in sys.argv[1:]] or [1, 10, 100])))
