"""001's prefill rule on and off, in virtual time: short requests behind large prefills.

A pool of ``replicas`` deployments of equal weight, each one prefill-bound
server (``tokens_per_s`` of prompt). Requests arrive as a Poisson stream at
``rate`` per second; ``elephant_share`` of them are large (200,000-300,000
prompt tokens, every token uncached), the rest short (500-3,000). Each is
routed by the gateway's own pure core (``routing.selection.next_deployment``,
``simple-shuffle``) on a snapshot of what the fleet had written ``lag_s``
before: per deployment the in-flight count and the prefill lease (the
uncached estimate from an attempt's start to its first token), as the usage
buckets carry them. Its time to first token is when its prefill ends.

Two server models, since the answer depends on how a server schedules prefill:

- ``fifo``: one prompt at a time in arrival order (head-of-line blocking: a
  large prompt holds everything queued behind it, as 001 describes);
- ``shared``: the rate shared by every prompt the server holds (chunked
  prefill interleaving them: processor sharing).

Modelled, not measured: the servers, the arrival process, the read lag.
Real: the routing decision. Not modelled: decoding (in-flight counts end at
the first token too, which flatters the in-flight rule), prompt caching
(every prompt is cold, so the hints play no part), bindings.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable
from dataclasses import dataclass, field

from edgeproxy.config.deployment import Deployment
from edgeproxy.config.strategies import PrefillParams, Strategy, StrategyParams, WeightedDrawParams
from edgeproxy.routing.selection import Pick, RouteRequest, next_deployment
from edgeproxy.routing.snapshot import PoolSnapshot, Usage

ELEPHANT = (200_000, 300_000)
SHORT = (500, 3_000)
MINUTE = 1  # every lease in one bucket: the run is virtual, buckets do not expire in it

# The policies compared: the default, the in-flight rule at its most eager, 001's rule.
POLICIES: dict[str, StrategyParams] = {
    "off (default)": WeightedDrawParams(),
    "in-flight two choices": WeightedDrawParams(intervene_inflight=1),
    "prefill rule": WeightedDrawParams(prefill=PrefillParams()),
}


@dataclass(frozen=True)
class PrefillScenario:
    """One workload on one pool."""

    server: str = "fifo"  # fifo | shared
    replicas: int = 4
    tokens_per_s: float = 10_000.0
    rate: float = 5.7  # about 60 % of the pool's prefill capacity
    elephant_share: float = 0.01
    seconds: float = 3600.0
    lag_s: float = 0.01  # a read sees the writes that landed this long before it
    seed: int = 1


@dataclass
class PrefillOutcome:
    """Times to first token of one run, short and large requests apart."""

    scenario: PrefillScenario
    policy: str
    short_s: list[float] = field(default_factory=list)
    large_s: list[float] = field(default_factory=list)
    prompt_tokens: int = 0
    last_first_token: float = 0.0

    def q(self, values: list[float], q: float) -> float:
        """The ``q`` quantile of ``values`` (seconds; 0 when empty)."""
        if not values:
            return 0.0
        ordered = sorted(values)
        return ordered[min(len(ordered) - 1, max(0, math.ceil(q * len(ordered)) - 1))]

    def throughput(self) -> tuple[float, float]:
        """Requests and prompt tokens served per second, over the run to its last first token."""
        served = len(self.short_s) + len(self.large_s)
        took = self.last_first_token or 1.0
        return served / took, self.prompt_tokens / took


@dataclass
class _Job:
    arrived: float
    tokens: int
    visible: float  # when its lease (start count) reached the store
    left: float  # prompt tokens still to prefill (shared)
    first_token: float = math.inf


class _Replica:
    """One deployment's server: its jobs, and when each reaches its first token."""

    def __init__(self, server: str, tokens_per_s: float) -> None:
        self._server, self._rate = server, tokens_per_s
        self.jobs: list[_Job] = []  # not yet at their first token as of ``at``
        self.done: list[_Job] = []
        self._free_at, self._at = 0.0, 0.0

    def take(self, job: _Job) -> None:
        if self._server == "fifo":
            job.first_token = max(job.arrived, self._free_at) + job.tokens / self._rate
            self._free_at = job.first_token
        self.jobs.append(job)

    def advance(self, now: float) -> None:
        """Run the server to ``now``: jobs whose first token came move to ``done``."""
        if self._server == "fifo":
            finished = [j for j in self.jobs if j.first_token <= now]
        else:
            finished = self._share(now)
        if finished:
            self.done.extend(finished)
            self.jobs = [j for j in self.jobs if j.first_token > now]
        self._at = now

    def _share(self, now: float) -> list[_Job]:
        finished: list[_Job] = []
        at = self._at
        active = [j for j in self.jobs if j.first_token == math.inf]
        while active:
            each = self._rate / len(active)
            shortest = min(j.left for j in active)
            step = shortest / each
            if at + step > now:
                for j in active:
                    j.left -= (now - at) * each
                break
            at += step
            for j in active:
                j.left -= shortest
            for j in [j for j in active if j.left <= 1e-6]:
                j.first_token = at
                finished.append(j)
            active = [j for j in active if j.first_token == math.inf]
        return finished

    def usage(self, dep_id: str, seen_at: float) -> Usage:
        """The bucket a read at ``seen_at`` saw: leases started and not yet released by then."""
        held = [
            j
            for j in self.jobs + self.done[-64:]
            if j.visible <= seen_at and j.first_token > seen_at
        ]
        return Usage(
            dep_id,
            MINUTE,
            inflight=len(held),
            prefill_tokens=sum(j.tokens for j in held),
            prefill_elephants=sum(1 for j in held if j.tokens >= ELEPHANT[0]),
        )


def run(scenario: PrefillScenario, policy: str) -> PrefillOutcome:
    """One run of ``scenario`` routed by ``POLICIES[policy]``."""
    rng, route_rng = random.Random(scenario.seed), random.Random(scenario.seed + 1)
    deps = [_deployment(i) for i in range(scenario.replicas)]
    replicas = {d.id: _Replica(scenario.server, scenario.tokens_per_s) for d in deps}
    params = POLICIES[policy]
    out = PrefillOutcome(scenario, policy)
    now = 0.0
    while True:
        now += rng.expovariate(scenario.rate)
        if now >= scenario.seconds:
            break
        large = rng.random() < scenario.elephant_share
        tokens = rng.randint(*(ELEPHANT if large else SHORT))
        for replica in replicas.values():
            replica.advance(now)
        seen = now - scenario.lag_s
        snapshot = PoolSnapshot(usage={d: [r.usage(d, seen)] for d, r in replicas.items()})
        request = RouteRequest(
            strategy=Strategy.SIMPLE_SHUFFLE,
            params=_fixed(params),
            sticky=False,
            prompt_tokens=tokens,
        )
        pick = next_deployment(deps, snapshot, request, float(MINUTE * 60), route_rng)
        assert isinstance(pick, Pick)
        job = _Job(now, tokens, now + scenario.lag_s, float(tokens))
        replicas[pick.deployment.id].take(job)
        out.prompt_tokens += tokens
    for replica in replicas.values():
        replica.advance(math.inf)
        for job in replica.done:
            (out.large_s if job.tokens >= ELEPHANT[0] else out.short_s).append(
                job.first_token - job.arrived
            )
            out.last_first_token = max(out.last_first_token, job.first_token)
    return out


def runs(
    servers: tuple[str, ...] = ("fifo", "shared"), seeds: int = 3, seconds: float = 3600.0
) -> list[PrefillOutcome]:
    """Every policy on every server model, ``seeds`` runs each pooled into one outcome."""
    pooled = []
    for server in servers:
        for policy in POLICIES:
            total = PrefillOutcome(PrefillScenario(server=server, seconds=seconds), policy)
            for seed in range(seeds):
                one = run(PrefillScenario(server=server, seconds=seconds, seed=seed + 1), policy)
                total.short_s += one.short_s
                total.large_s += one.large_s
                total.prompt_tokens += one.prompt_tokens
                total.last_first_token += one.last_first_token
            pooled.append(total)
    return pooled


def rows(outcomes: list[PrefillOutcome]) -> list[str]:
    """The report's table."""
    head = (
        "| server | routing | short p50 / p99 / p99.9 TTFT s | large p50 / p99 TTFT s | "
        "requests/s | prompt tokens/s | short / large requests |"
    )
    lines = [head, "|" + "---|" * 7]
    for o in outcomes:
        s, e = o.short_s, o.large_s
        per_s, tokens_per_s = o.throughput()
        lines.append(
            f"| {o.scenario.server} | {o.policy} | {o.q(s, 0.5):.2f} / {o.q(s, 0.99):.2f} / "
            f"{o.q(s, 0.999):.2f} | {o.q(e, 0.5):.1f} / {o.q(e, 0.99):.1f} | {per_s:.2f} | "
            f"{tokens_per_s:,.0f} | {len(s)} / {len(e)} |"
        )
    return lines


def _fixed(params: StrategyParams) -> Callable[[int, Strategy], StrategyParams]:
    return lambda _tier, _strategy: params


def _deployment(index: int) -> Deployment:
    return Deployment.model_validate(
        {
            "id": f"replica-{index}",
            "model": "chat",
            "provider": "openai_compat",
            "base_url": "https://replica.test/v1",
            "upstream_model": "m",
        }
    )
