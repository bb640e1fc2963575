"""Virtual instances on the capacity model, in virtual time.

Each instance is one Lambda execution environment: one request at a time,
its own calls, nothing coalesced. Requests arrive as a Poisson stream at
``rate`` per second; an arrival takes an idle instance or starts a new one
(up to ``max_instances``, beyond which it is refused like a Lambda throttle).
A request does what the gateway does for a deployment with an rpm limit:

1. one BatchGetItem of its routing items (circuit, health, capacity and every
   usage shard of the minute: ``keys.usage_shard_keys``), throttled keys
   retried like ``Table.batch_get`` (up to 5 rounds, 50 ms doubling);
2. routing refuses at the *summed* count (the pure core's view);
3. admission on the shards in ``allowance.probe_order`` from a random start,
   each a conditional ADD under the shard's ``allowance`` (a throttled call
   retried once after up to 25 ms, as ``DynamoClient`` does; throttled again,
   the request fails with a 503 and nothing was counted);
4. the upstream call (``upstream_s``, uniform around its mean);
5. the outcome ADD on a random shard (the attribute names ``items.usage_counters``
   gives a real success, so item sizes are real), retried the same way; a
   second throttle loses it.

Every store call takes ``rtt_s`` and happens at its midpoint. Modelled, not
measured: the round trip, the upstream, the capacity rules (``capacity``),
and eventual consistency (a read sees every write before it; admission does
not depend on reads, so exactness does not either).
"""

from __future__ import annotations

import heapq
import math
import random
from collections.abc import Generator
from dataclasses import dataclass, field

from bench.fleet.capacity import CapacityModel, Item, ItemTooLarge, Key
from bench.fleet.outcome import outcome
from bench.fleet.table import SimTable, Throttled
from edgeproxy.routing import allowance
from edgeproxy.state import items, keys

DEPLOYMENT = "hot"
MINUTE = 29_000_000
BATCH_ROUNDS, BATCH_BACKOFF_S = 5, 0.05
RETRY_BASE_S = 0.025
Step = Generator[float, None, None]


@dataclass(frozen=True)
class Scenario:
    """One run: offered rate, length, shard count and the deployment's rpm limit."""

    rate: float
    seconds: float
    shards: int
    rpm_limit: int
    rtt_s: float = 0.005
    upstream_s: float = 0.1
    max_instances: int = 2000
    seed: int = 1


@dataclass
class Outcome:
    """What one run measured."""

    scenario: Scenario
    offered: int = 0
    admitted: int = 0
    refused_at_limit: int = 0
    store_errors: int = 0
    lost_outcomes: int = 0
    lambda_throttles: int = 0
    peak_instances: int = 0
    added_s: list[float] = field(default_factory=list)
    counted: int = 0  # the requests counter summed over the shards at the end
    throttles: int = 0
    condition_failures: int = 0
    read_units: float = 0.0
    write_units: float = 0.0
    too_large: int = 0
    partitions: int = 0  # at the end (splits included)
    partitions0: int = 0  # at the start
    largest_item: int = 0

    def p(self, q: float) -> float:
        """The ``q`` quantile of the added (store) latency, in ms."""
        if not self.added_s:
            return 0.0
        ordered = sorted(self.added_s)
        return 1000.0 * ordered[min(len(ordered) - 1, math.ceil(q * len(ordered)) - 1)]


class Fleet:
    """The event loop: instances as generators that yield how long they wait."""

    def __init__(self, scenario: Scenario, model: CapacityModel | None = None) -> None:
        self.s = scenario
        self.rng = random.Random(scenario.seed)
        self.table = SimTable(model or CapacityModel())
        self.out_partitions0 = self.table.model.partition_count()
        self.now = 0.0
        self.out = Outcome(scenario)
        self._queue: list[tuple[float, int, Step]] = []
        self._seq = 0
        self._busy = 0
        self._routing = [keys.circuit_key(DEPLOYMENT), keys.health_key(DEPLOYMENT)]
        self._routing.append(keys.capacity_key(DEPLOYMENT))
        self._usage = keys.usage_shard_keys(DEPLOYMENT, MINUTE, scenario.shards)

    def run(self) -> Outcome:
        """Drive the scenario to its end and every request to its last write."""
        t = 0.0
        while True:
            t += self.rng.expovariate(self.s.rate)
            if t >= self.s.seconds:
                break
            self._at(t, self._arrival())
        while self._queue:
            self.now, _, step = heapq.heappop(self._queue)
            try:
                wait = next(step)
            except StopIteration:
                continue
            self._at(self.now + wait, step)
        return self._finish()

    def _at(self, when: float, step: Step) -> None:
        self._seq += 1
        heapq.heappush(self._queue, (when, self._seq, step))

    def _arrival(self) -> Step:
        yield 0.0
        self.out.offered += 1
        if self._busy >= self.s.max_instances:
            self.out.lambda_throttles += 1
            return
        self._busy += 1
        self.out.peak_instances = max(self.out.peak_instances, self._busy)
        try:
            yield from self._request()
        finally:
            self._busy -= 1

    def _request(self) -> Step:
        start = self.now
        found: dict[Key, Item] = {}
        wanted = self._routing + self._usage
        for attempt in range(BATCH_ROUNDS):
            yield self.s.rtt_s / 2
            try:
                got, wanted = self.table.batch_get(wanted, self.now)
            except Throttled:
                got = {}
            found.update(got)
            yield self.s.rtt_s / 2
            if not wanted:
                break
            yield BATCH_BACKOFF_S * 2**attempt
        else:
            self.out.store_errors += 1
            return
        used = sum(float(found[k].get("requests", 0)) for k in self._usage if k in found)
        if used >= self.s.rpm_limit:
            self.out.refused_at_limit += 1
            self.out.added_s.append(self.now - start)
            return
        admitted = yield from self._admit()
        self.out.added_s.append(self.now - start)
        if admitted is None:
            self.out.store_errors += 1
            return
        if not admitted:
            self.out.refused_at_limit += 1
            return
        self.out.admitted += 1
        latency_s = self.s.upstream_s * (0.5 + self.rng.random())
        yield latency_s
        second = int(self.now) % 60
        counters = items.usage_counters(
            outcome(self.rng, DEPLOYMENT, MINUTE, second, latency_s, None)
        )
        shard = self.rng.randrange(self.s.shards)
        key = keys.usage_shard_key(DEPLOYMENT, MINUTE, shard)
        if (yield from self._write(key, counters)) is None:
            self.out.lost_outcomes += 1

    def _admit(self) -> Generator[float, None, bool | None]:
        """True admitted, False every shard full, None a throttled write (503)."""
        n = self.s.shards
        for shard in allowance.probe_order(n, self.rng.randrange(n)):
            room = allowance.allowance(self.s.rpm_limit, n, shard)
            if room == 0:
                continue
            key = keys.usage_shard_key(DEPLOYMENT, MINUTE, shard)
            won = yield from self._write(key, {"requests": 1, "inflight": 1}, ("requests", room))
            if won is None or won:
                return won
        return False

    def _write(
        self, key: Key, counters: dict[str, float], below: tuple[str, float] | None = None
    ) -> Generator[float, None, bool | None]:
        """One UpdateItem with the client's one retry; None when both attempts were throttled."""
        for attempt in range(2):
            yield self.s.rtt_s / 2
            try:
                won = self.table.add(key, counters, self.now, below)
            except (Throttled, ItemTooLarge):
                yield self.s.rtt_s / 2 + self.rng.random() * RETRY_BASE_S * 2**attempt
                continue
            yield self.s.rtt_s / 2
            return won
        return None

    def _finish(self) -> Outcome:
        out, counts = self.out, self.table.counts
        out.counted = int(
            sum(float((self.table.item(k) or {}).get("requests", 0)) for k in self._usage)
        )
        out.throttles, out.condition_failures = counts.throttles, counts.condition_failures
        out.read_units, out.write_units = counts.read_units, counts.write_units
        out.too_large = counts.too_large
        out.partitions = self.table.model.partition_count()
        out.partitions0 = self.out_partitions0
        out.largest_item = max(self.table.size(k) for k in self._usage)
        return out
