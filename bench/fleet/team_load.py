"""A hot team's minute bucket on the capacity model, in virtual time, with and without shards.

What a request of a key in a team with an ``rpm_limit`` and a ``tpm_limit``
does to the team's bucket (``state/dynamodb/dynamo_levels.py``), planned by
the real pure core (``routing.judge.levels``: ``charges``, ``start_shards``,
``borrow``, each shard's ``rpm_room``) and keyed by the real layout
(``level_usage_key``):

1. the admission transaction: a conditional ADD of one request on the start
   shard under its share (2 write units: a transactional write); a failed
   condition borrows from the next shard (a shard seen at its rpm share is
   skipped by that process for the rest of the minute, and a process that
   saw every shard full refuses with no write); a throttle is retried once after
   up to 25 ms, then the request is a 503 and nothing was counted;
2. the upstream call (``upstream_s``, uniform around its mean);
3. the settlement transaction: the tokens ADDed to the same shard (2 units),
   retried the same way; a second throttle loses it (an overcount, never an
   overshoot).

Modelled, not measured: the round trip, the upstream, the capacity rules.
Only the team's bucket is modelled (the key's and deployment's writes are
elsewhere, on partitions of their own).
"""

from __future__ import annotations

import heapq
import math
import random
from collections.abc import Generator
from dataclasses import dataclass

from bench.fleet.capacity import CapacityModel, ItemTooLarge, Key
from bench.fleet.table import SimTable, Throttled
from edgeproxy.routing.access import ClientKey
from edgeproxy.routing.hierarchy import Group, Level
from edgeproxy.routing.judge.levels import LevelCharge, borrow, charges, level_limits, start_shards
from edgeproxy.routing.judge.ruling import Estimate
from edgeproxy.state.dynamodb.dynamo_levels import level_usage_key

NOW = 1_740_000_000.0
RETRY_BASE_S = 0.025
Step = Generator[float, None, None]


@dataclass(frozen=True)
class TeamScenario:
    rate: float
    seconds: float
    shards: int
    rtt_s: float = 0.005
    upstream_s: float = 0.1
    partitions: int = 64  # a warm table
    processes: int = 200  # gateway processes (Lambda environments), each its own memory
    seed: int = 1

    @property
    def rpm_limit(self) -> int:
        return int(0.7 * self.rate * self.seconds)  # reached 70% into the run: exactness shows


@dataclass
class TeamOutcome:
    scenario: TeamScenario
    offered: int = 0
    admitted: int = 0
    refused_at_limit: int = 0
    store_errors: int = 0  # 503: the admission throttled twice
    lost_settlements: int = 0
    borrows: int = 0
    counted: int = 0  # requests summed over the shards at the end
    throttles: int = 0

    @property
    def served_per_s(self) -> float:
        """Admitted requests per second until the limit was reached (or the run's end)."""
        return self.admitted / self.scenario.seconds


def team_shards_for(rate: float) -> int:
    """One shard per ~200 requests a second (a bucket with a tpm limit takes ~250), at least 2."""
    return int(min(32, max(2, 2 ** math.ceil(math.log2(rate / 200)))))


class TeamFleet:
    def __init__(self, scenario: TeamScenario) -> None:
        self.s = scenario
        self.rng = random.Random(scenario.seed)
        self.table = SimTable(CapacityModel(partitions=scenario.partitions))
        self.out = TeamOutcome(scenario)
        team = Group(
            Level.TEAM,
            "hot",
            "Hot",
            parent="acme",
            rpm_limit=scenario.rpm_limit,
            tpm_limit=10**12,  # not binding: only makes the settlement write the bucket
            counter_shards=scenario.shards,
        )
        key = ClientKey("0123456789abcdef00", "k", team_id="hot")
        (self.plan,) = charges(level_limits(key, team, None, None), Estimate(300, 0.0), NOW)
        self.now = 0.0
        self._queue: list[tuple[float, int, Step]] = []
        self._seq = 0
        self._full: list[set[int]] = [set() for _ in range(scenario.processes)]

    def _key(self, c: LevelCharge) -> Key:
        return level_usage_key(c.limits.partition, c.minute, c.shard)

    def run(self) -> TeamOutcome:
        t = 0.0
        while True:
            t += self.rng.expovariate(self.s.rate)
            if t >= self.s.seconds:
                break
            self._at(t, self._request())
        while self._queue:
            self.now, _, step = heapq.heappop(self._queue)
            try:
                wait = next(step)
            except StopIteration:
                continue
            self._at(self.now + wait, step)
        out = self.out
        keys = [
            level_usage_key(self.plan.limits.partition, self.plan.minute, s)
            for s in range(self.s.shards)
        ]
        out.counted = int(sum(float((self.table.item(k) or {}).get("requests", 0)) for k in keys))
        out.throttles = self.table.counts.throttles
        return out

    def _at(self, when: float, step: Step) -> None:
        self._seq += 1
        heapq.heappush(self._queue, (when, self._seq, step))

    def _request(self) -> Step:
        yield 0.0
        self.out.offered += 1
        (c,) = start_shards([self.plan], self.rng)
        full = self._full[self.rng.randrange(self.s.processes)]
        start = c.shard
        found = borrow(c, start, 0, full)
        while True:
            if found is None:
                self.out.refused_at_limit += 1
                return
            c, tried = found
            won = yield from self._write(c, {"requests": 1, "tokens": 300}, True)
            if won is None:
                self.out.store_errors += 1
                return
            if won:
                break
            full.add(c.shard)
            found = borrow(c, start, tried + 1, full)
            self.out.borrows += found is not None
        self.out.admitted += 1
        yield self.s.upstream_s * (0.5 + self.rng.random())
        if (yield from self._write(c, {"tokens": -100}, False)) is None:
            self.out.lost_settlements += 1

    def _write(
        self, c: LevelCharge, counters: dict[str, float], admit: bool
    ) -> Generator[float, None, bool | None]:
        below = ("requests", float(c.rpm_room or 0)) if admit else None
        for attempt in range(2):
            yield self.s.rtt_s / 2
            try:
                won = self.table.add(self._key(c), counters, self.now, below, transactional=True)
            except (Throttled, ItemTooLarge):
                yield self.s.rtt_s / 2 + self.rng.random() * RETRY_BASE_S * 2**attempt
                continue
            yield self.s.rtt_s / 2
            return won
        return None


def team_runs(rates: tuple[int, ...], seconds: float) -> list[TeamOutcome]:
    """Each rate with one bucket item and with ``team_shards_for(rate)`` shards."""
    runs = []
    for rate in rates:
        for shards in (1, team_shards_for(rate)):
            runs.append(TeamFleet(TeamScenario(rate, seconds, shards)).run())
            print(f"team {rate}/s shards {shards}: done", flush=True)
    return runs


def team_rows(runs: list[TeamOutcome]) -> list[str]:
    """The report's Markdown table of the team runs."""
    rows = [
        "| offered/s | shards | rpm limit | admitted | counted | refused at limit | 503 | "
        "lost settlements | borrows | throttles |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for o in runs:
        s = o.scenario
        rows.append(
            f"| {s.rate:.0f} | {s.shards} | {s.rpm_limit} | {o.admitted} | {o.counted} | "
            f"{o.refused_at_limit} | {o.store_errors} | {o.lost_settlements} | {o.borrows} | "
            f"{o.throttles} |"
        )
    return rows


if __name__ == "__main__":
    print("\n".join(team_rows(team_runs((250, 500, 1000, 2000), 4.0))))
