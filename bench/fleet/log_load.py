"""The request log on the capacity model: its records and aggregates at a given rate.

Every request is a Lambda's (nothing buffered: the most writes a request can
cost the log): one PutItem of its record and one ``ADD`` to its hour's
aggregate, both at the request's end, each retried once (25 ms jitter) when
throttled, as the client does, then lost. Every request is one client key's
on one model and deployment: the hottest aggregate there can be. The keys
are the gateway's own (``state/usage_log.py``: the record's shard from its
request id, the aggregate's at random), with ``shards`` = 1 standing for the
unsharded layout. Records carry real attribute names and typical values, so
their write units are real.
"""

from __future__ import annotations

import heapq
import random
import zlib
from dataclasses import dataclass

from bench.fleet.capacity import CapacityModel, Item, Key, item_size, write_units
from bench.fleet.table import SimTable, Throttled
from edgeproxy.state import usage_log as layout
from edgeproxy.state.dynamodb.dynamo_usage import record_item

AT = 1_796_000_000.0
RETRY_S = 0.025


@dataclass
class LogOutcome:
    """What one run of the log measured."""

    rate: float
    shards: int
    partitions: int
    offered: int = 0
    lost_records: int = 0
    lost_aggregates: int = 0
    throttles: int = 0
    write_units: float = 0.0
    record_bytes: int = 0


def _record(i: int, rng: random.Random) -> layout.RequestRecord:
    return layout.RequestRecord(
        at=AT + i / 1000,
        request_id=f"{rng.getrandbits(64):016x}",
        model="chat-large",
        operation="chat",
        stream=False,
        status=200,
        outcome="success",
        expires_at=AT + 30 * 86400,
        key_id="k_0123456789abcdef",
        key_name="billing-app",
        served_model="gpt-4o-mini-2024-07-18",
        deployment="azure-eastus",
        tried=("azure-eastus",),
        attempts=1,
        prompt_tokens=rng.randint(20, 2000),
        completion_tokens=rng.randint(20, 800),
        cost_usd=rng.uniform(1e-5, 1e-2),
        latency_ms=rng.randint(200, 3000),
        upstream_ms=rng.randint(190, 2990),
        added_ms=rng.randint(2, 9),
    )


def _flat(item: dict[str, dict[str, object]]) -> Item:
    flat: Item = {}
    for name, value in item.items():
        raw = next(iter(value.values()))
        flat[name] = float(str(raw)) if "N" in value else str(raw)
    return flat


def run(rate: float, seconds: float, shards: int, partitions: int, seed: int = 1) -> LogOutcome:
    """Offer ``rate`` requests a second for ``seconds`` to a table of ``partitions``."""
    rng = random.Random(seed)
    model = CapacityModel(partitions=partitions)
    table = SimTable(model)
    out = LogOutcome(rate, shards, partitions)
    events: list[tuple[float, int, str, Key, Item, int]] = []
    t, seq = 0.0, 0
    day = int(AT // layout.DAY_S)
    while (t := t + rng.expovariate(rate)) < seconds:
        record = _record(out.offered, rng)
        out.offered += 1
        shard = zlib.crc32(record.request_id.encode()) % shards
        pk = layout.log_partition(record.hour, shard)
        key = (pk, f"{int(record.at * 1000):013d}#{record.request_id}")
        attrs = _flat(record_item(record))  # type: ignore[arg-type]
        out.record_bytes = item_size(key, attrs)
        row = (layout.usage_partition(day, rng.randrange(shards)), "0498888#k#chat-large#az")
        counters: Item = {"requests": 1, "prompt_tokens": record.prompt_tokens}
        counters["completion_tokens"] = record.completion_tokens
        counters["cost_usd"] = record.cost_usd
        seq += 2
        heapq.heappush(events, (t, seq, "record", key, attrs, 0))
        heapq.heappush(events, (t, seq + 1, "aggregate", row, counters, 0))
    while events:
        now, seq, kind, key, attrs, tries = heapq.heappop(events)
        try:
            if kind == "record":
                units = write_units(0, item_size(key, attrs))
                if not model.charge(key, units, now, write=True):
                    raise Throttled(str(key))
                out.write_units += units
            else:
                before = table.counts.write_units
                table.add(key, {n: float(v) for n, v in attrs.items()}, now)
                out.write_units += table.counts.write_units - before
        except Throttled:
            out.throttles += 1
            if tries == 0:
                heapq.heappush(events, (now + rng.random() * RETRY_S, seq, kind, key, attrs, 1))
            elif kind == "record":
                out.lost_records += 1
            else:
                out.lost_aggregates += 1
    return out


def log_rows(runs: list[LogOutcome]) -> list[str]:
    """The log's table for the report."""
    rows = [
        "| table | rate/s | log shards | lost records | lost aggregates | throttled writes "
        "| WRU per request | record size |",
        "|" + "---|" * 8,
    ]
    for o in runs:
        n = max(1, o.offered)
        rows.append(
            f"| {o.partitions} partitions | {o.rate:.0f} | {o.shards} | {o.lost_records} | "
            f"{o.lost_aggregates} | {o.throttles} | {o.write_units / n:.2f} | {o.record_bytes} B |"
        )
    return rows
