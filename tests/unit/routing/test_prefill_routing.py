"""001's prefill rule as routing runs it: ``simple-shuffle``'s ``prefill`` parameter, the
lease readings from the snapshot, the hints' TTL on a virtual clock, the affinity ceiling."""

from __future__ import annotations

import random
from collections import Counter
from dataclasses import replace

from edgeproxy.config.strategies import PrefillParams, Strategy, WeightedDrawParams
from edgeproxy.routing.ordering.strategies import reads_counters
from edgeproxy.routing.prefill.choice import lease_of
from edgeproxy.routing.prefill.hints import Hint
from edgeproxy.routing.selection import Pick, RouteRequest, next_deployment
from edgeproxy.routing.snapshot import Binding, BindingKey, PoolSnapshot, Usage
from edgeproxy_dev.clock import Clock

from .builders import dep

MINUTE = 1000
BIG = 250_000  # a large prompt under 001's defaults (200,000 uncached tokens)
RULE = PrefillParams()


def params(rule: PrefillParams | None) -> RouteRequest:
    """A ``simple-shuffle`` request of ``BIG`` prompt tokens with the rule on (or off: None)."""
    return RouteRequest(
        strategy=Strategy.SIMPLE_SHUFFLE,
        caller="key:x",
        params=lambda _tier, _strategy: WeightedDrawParams(prefill=rule),
        prompt_tokens=BIG,
    )


def leased(**leases: tuple[int, int]) -> PoolSnapshot:
    """A snapshot whose usage buckets hold these prefill leases (tokens, large) by deployment,
    split over the two buckets a routing read sums."""
    usage = {
        dep_id: [
            Usage(dep_id, MINUTE - 1, prefill_tokens=tokens // 2, prefill_elephants=large),
            Usage(dep_id, MINUTE, prefill_tokens=tokens - tokens // 2),
        ]
        for dep_id, (tokens, large) in leases.items()
    }
    return PoolSnapshot(usage=usage)


def picks(
    snapshot: PoolSnapshot, request: RouteRequest, now: float = MINUTE * 60.0, n: int = 400
) -> Counter[str]:
    rng = random.Random(5)
    deps = [dep("a", weight=9), dep("b", weight=1)]
    out: Counter[str] = Counter()
    for _ in range(n):
        got = next_deployment(deps, snapshot, request, now, rng)
        assert isinstance(got, Pick)
        out[got.deployment.id] += 1
    return out


def test_the_parameter_decides_whether_a_large_request_skips_a_deployment_at_its_limit() -> None:
    busy = leased(a=(210_000, 1))  # another instance's large prefill on a
    off = picks(busy, params(None))
    assert 0.85 < off["a"] / 400 < 0.95  # the weights alone (9:1)
    assert picks(busy, params(RULE)) == Counter({"b": 400})


def test_a_warm_continuation_is_not_large_until_its_hint_expires() -> None:
    clock = Clock()
    busy = leased(a=(10_000, 1))  # below intervene_tokens: only the limit can move a request
    hint = {"a": Hint(BIG - 5_000, at=clock.now())}  # this caller's last prompt on a
    request = params(RULE)
    warm = replace(request, hints=hint)
    clock.advance(RULE.hint_ttl_seconds - 1)
    assert picks(busy, warm, clock.now())["a"] > 340  # 5,000 uncached on a: not large there
    clock.advance(1)  # the hint's TTL is over: the whole prompt is uncached again
    assert picks(busy, warm, clock.now()) == Counter({"b": 400})
    assert picks(busy, request, clock.now()) == Counter({"b": 400})  # no hint at all


def test_a_binding_is_given_up_above_the_affinity_ceiling_and_kept_at_it() -> None:
    bound = Binding(BindingKey("key:x", "gpt", ""), "a", expires_at=MINUTE * 60.0 + 300)
    small = replace(params(RULE), prompt_tokens=100)

    def first(tokens: int, request: RouteRequest) -> Pick:
        snapshot = leased(a=(tokens, 0))
        snapshot = PoolSnapshot(usage=snapshot.usage, binding=bound)
        got = next_deployment(
            [dep("a"), dep("b")], snapshot, request, MINUTE * 60.0, random.Random(1)
        )
        assert isinstance(got, Pick)
        return got

    at_ceiling = first(RULE.affinity_ceiling, small)
    assert (at_ceiling.deployment.id, at_ceiling.sticky) == ("a", True)
    above = first(RULE.affinity_ceiling + 1, small)
    assert (above.deployment.id, above.sticky) == ("b", False)  # a is excluded from the draw
    off = first(10 * RULE.affinity_ceiling, replace(params(None), prompt_tokens=100))
    assert (off.deployment.id, off.sticky) == ("a", True)


def test_above_the_ceiling_a_binding_to_the_only_deployment_still_routes() -> None:
    bound = Binding(BindingKey("key:x", "gpt", ""), "a", expires_at=MINUTE * 60.0 + 300)
    snapshot = PoolSnapshot(usage=leased(a=(10**7, 3)).usage, binding=bound)
    pool = [dep("a"), dep("b", weight=0)]
    got = next_deployment(pool, snapshot, params(RULE), MINUTE * 60.0, random.Random(1))
    assert isinstance(got, Pick)
    assert got.deployment.id == "a"


def test_the_lease_an_attempt_takes() -> None:
    now = 5_000.0
    hints = {"a": Hint(BIG - 1_000, at=now - 10)}
    assert lease_of(None, "a", BIG, hints, now) == (0, 0)  # off: nothing leased or written
    assert lease_of(RULE, "b", BIG, hints, now) == (BIG, 1)
    assert lease_of(RULE, "a", BIG, hints, now) == (1_000, 0)
    assert lease_of(RULE, "a", BIG, hints, now + RULE.hint_ttl_seconds) == (BIG, 1)


def test_the_rule_needs_the_usage_buckets_in_the_routing_read() -> None:
    assert not reads_counters(Strategy.SIMPLE_SHUFFLE)
    assert reads_counters(Strategy.SIMPLE_SHUFFLE, WeightedDrawParams(prefill=RULE))
