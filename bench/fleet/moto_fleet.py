"""Real instances on the embedded store, in real time: the gateway's own store code under a fleet.

Each virtual instance is one ``DynamoStore`` with its own ``DynamoClient``
(its own connection pool) handling one request at a time, as one Lambda
execution environment does; nothing is coalesced. A request is what the
router does for a deployment with an rpm limit: ``read_pool`` (the
deployment's circuit, health, capacity and every usage shard, summed),
refusal at the summed limit, ``admit`` with the shard count, and the
outcome ``record``. Arrivals are paced at ``rate`` per second over the
instances (open loop: an instance that falls behind starts late, which
shows as the achieved rate). Measured: admissions, failed conditions (from
the store's answers), store latency on the critical path (read + admit),
and calls; read and write units are estimated per call (items stay under
1 KB here: 0.5 per key read, 1 per write, failed conditions included).

moto is one Python process on a 2-core machine: it serves a few hundred
calls per second, so this leg checks exactness and per-request units with
real concurrency, not DynamoDB's throughput (the capacity model does that).
"""

from __future__ import annotations

import asyncio
import random
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

import aioboto3
from botocore.exceptions import ClientError

from edgeproxy.aws.dynamodb import DynamoClient
from edgeproxy.clients import store_options
from edgeproxy.settings import Settings
from edgeproxy.state.dynamodb.dynamo import DynamoStore
from edgeproxy.state.store import SnapshotRequest, UsageDelta
from edgeproxy_dev import template
from edgeproxy_dev.dynamo_server import EmbeddedDynamo, client_kwargs, create_table

DEPLOYMENT = "hot"


@dataclass
class MotoOutcome:
    """What one real-time run measured."""

    rate: float
    seconds: float
    instances: int
    shards: int
    rpm_limit: int
    offered: int = 0
    admitted: int = 0
    refused: int = 0
    errors: int = 0
    counted: int = 0
    condition_failures: int = 0
    reads: int = 0
    read_keys: int = 0
    writes: int = 0
    elapsed: float = 0.0
    added_s: list[float] = field(default_factory=list)

    def p(self, q: float) -> float:
        """The ``q`` quantile of the critical path's store latency, in ms."""
        ordered = sorted(self.added_s) or [0.0]
        return 1000.0 * ordered[min(len(ordered) - 1, int(q * len(ordered)))]


class _Counted:
    """A client that counts calls, keys read and failed conditions (then passes them on)."""

    def __init__(self, inner: DynamoClient, out: MotoOutcome) -> None:
        self._inner, self._out = inner, out

    async def batch_get_item(self, **request: Any) -> dict[str, Any]:
        self._out.reads += 1
        self._out.read_keys += sum(len(t["Keys"]) for t in request["RequestItems"].values())
        return await self._inner.batch_get_item(**request)

    async def update_item(self, **request: Any) -> dict[str, Any]:
        self._out.writes += 1
        try:
            return await self._inner.update_item(**request)
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") == "ConditionalCheckFailedException":
                self._out.condition_failures += 1
            raise

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


async def _instance(
    store: DynamoStore, out: MotoOutcome, minute: int, starts: list[float], t0: float
) -> None:
    request = SnapshotRequest(
        "hot-pool",
        [DEPLOYMENT],
        [DEPLOYMENT],
        minute,
        previous_minute=False,
        shards=((DEPLOYMENT, out.shards),) if out.shards > 1 else (),
    )
    for start in starts:
        await asyncio.sleep(max(0.0, t0 + start - time.monotonic()))
        out.offered += 1
        began = time.monotonic()
        try:
            snapshot = await store.read_pool(request)
            if snapshot.usage_of(DEPLOYMENT, minute).requests >= out.rpm_limit:
                out.refused += 1
                out.added_s.append(time.monotonic() - began)
                continue
            won = await store.admit(DEPLOYMENT, minute, out.rpm_limit, 4e9, shards=out.shards)
            out.added_s.append(time.monotonic() - began)
            if not won:
                out.refused += 1
                continue
            out.admitted += 1
            delta = UsageDelta(DEPLOYMENT, minute, inflight=-1, successes=1, latency_ms_sum=100)
            await store.record(delta, 4e9)
        except Exception:  # a store error is a 503 for this request; count it, go on
            out.errors += 1


async def run_on_moto(
    endpoint: str, rate: float, seconds: float, instances: int, shards: int, rpm_limit: int
) -> MotoOutcome:
    """One run on a fresh table of ``endpoint``."""
    name = f"fleet-{uuid.uuid4().hex[:8]}"
    schema = create_table(endpoint, name, template.default_template_path())
    out = MotoOutcome(rate, seconds, instances, shards, rpm_limit)
    options = client_kwargs(endpoint)
    session = aioboto3.Session(
        aws_access_key_id=options["aws_access_key_id"],
        aws_secret_access_key=options["aws_secret_access_key"],
    )
    clients = [
        await DynamoClient.open(
            session,
            options["region_name"],
            endpoint,
            store_options(Settings(store_timeout_seconds=30)),
            random.Random(i).random,
        )
        for i in range(instances)
    ]
    try:
        total = int(rate * seconds)
        starts = [i / rate for i in range(total)]
        minute = int(time.time() // 60) + 10  # a bucket no other run touched
        t0 = time.monotonic() + 0.2
        await asyncio.gather(
            *(
                _instance(
                    DynamoStore(_Counted(c, out), name, schema, random.Random(i)),
                    out,
                    minute,
                    starts[i::instances],
                    t0,
                )
                for i, c in enumerate(clients)
            )
        )
        out.elapsed = time.monotonic() - t0
        check = DynamoStore(clients[0], name, schema, random.Random(0))
        buckets = await check.read_usage(DEPLOYMENT, minute, minute, shards)
        out.counted = sum(b.requests for b in buckets)
    finally:
        for c in clients:
            await c.close()
    return out


def moto_runs(plan: list[tuple[float, float, int, int, int]]) -> list[MotoOutcome]:
    """Each ``(rate, seconds, instances, shards, rpm_limit)`` on one embedded store."""
    with EmbeddedDynamo() as server:
        return [asyncio.run(run_on_moto(server.endpoint_url, *p)) for p in plan]
