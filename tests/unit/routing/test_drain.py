"""``enabled: false`` drains a deployment under every registered strategy.

The drained deployment is made the one each strategy would rank first
(heaviest, idle, cheapest, fastest, healthiest, the caller's binding, a due
probe), so only the switch can keep it out. The cases run over the strategy
registry itself: a strategy added later is covered without editing this file.
"""

from __future__ import annotations

import random

import pytest

from edgeproxy.config.deployment import Deployment
from edgeproxy.config.strategies import Strategy
from edgeproxy.routing.eligibility import Status, pool_status
from edgeproxy.routing.explain.reasons import Cause, Outcome
from edgeproxy.routing.ordering.registry import REGISTRY
from edgeproxy.routing.selection import Blocked, BlockReason, Pick, RouteRequest, next_deployment
from edgeproxy.routing.snapshot import (
    Binding,
    BindingKey,
    Circuit,
    CircuitState,
    Health,
    PoolSnapshot,
    Usage,
)

from .builders import dep

NOW = 60_000.0 + 15.0
MINUTE = 1000
STRATEGIES = [spec.name for spec in REGISTRY]
CALLERS = [f"key:{n}" for n in range(12)]


def pool(*, drained_enabled: bool) -> list[Deployment]:
    best = dep(
        "drained",
        enabled=drained_enabled,
        weight=50,
        input_price_per_mtok=0.1,
        output_price_per_mtok=0.1,
    )
    rest = [dep(f"busy-{n}", input_price_per_mtok=9.0, output_price_per_mtok=9.0) for n in range(2)]
    return [best, *rest]


def snapshot(caller: str, *, probe_due: bool = False) -> PoolSnapshot:
    """The drained deployment idle, fast and healthy; the others busy, slow and failing."""
    usage = {
        "drained": [Usage("drained", MINUTE)],
        **{d: [Usage(d, MINUTE, requests=40, inflight=9, prompt_tokens=9000)] for d in BUSY},
    }
    health = {
        "drained": Health("drained", 1.0, 50.0, 500.0, updated_at=NOW, samples=100),
        **{d: Health(d, 0.2, 5000.0, 5.0, updated_at=NOW, samples=100) for d in BUSY},
    }
    circuits = {}
    if probe_due:  # cooled down: the next request would probe it
        circuits["drained"] = Circuit("drained", CircuitState.OPEN, open_until=NOW - 1, version=1)
    binding = Binding(BindingKey(caller, "gpt", "openai.chat"), "drained", NOW + 600)
    return PoolSnapshot(circuits=circuits, usage=usage, health=health, binding=binding)


BUSY = ("busy-0", "busy-1")


def first(strategy: Strategy, deps: list[Deployment], caller: str, seed: int) -> Pick:
    req = RouteRequest(strategy=strategy, caller=caller, protocol="openai.chat")
    got = next_deployment(deps, snapshot(caller), req, NOW, random.Random(seed))
    assert isinstance(got, Pick), got
    return got


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_the_drained_deployment_would_win_when_enabled(strategy: Strategy) -> None:
    # The control: without the switch the binding sends every caller to it.
    deps = pool(drained_enabled=True)
    assert all(
        first(strategy, deps, c, n).deployment.id == "drained" for n, c in enumerate(CALLERS)
    )
    # And its strategy alone ranks it first for some callers (most, for all but the draws).
    req = RouteRequest(strategy=strategy, caller="key:nobody", sticky=False)
    picks = [
        next_deployment(deps, snapshot(c), req, NOW, random.Random(n))
        for n, c in enumerate(CALLERS)
    ]
    assert any(isinstance(p, Pick) and p.deployment.id == "drained" for p in picks)


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_a_disabled_deployment_is_never_picked(strategy: Strategy) -> None:
    deps = pool(drained_enabled=False)
    for n, caller in enumerate(CALLERS):
        got = first(strategy, deps, caller, n)
        assert got.deployment.id in BUSY
        reason = next(r for r in got.reasons if r.deployment_id == "drained")
        assert (reason.outcome, reason.cause, reason.bound) == (
            Outcome.EXCLUDED,
            Cause.DISABLED,
            True,
        )
    # Nor when its strategy ranks it without a binding (unbound caller, sticky off).
    req = RouteRequest(strategy=strategy, caller="key:nobody", sticky=False)
    for seed in range(20):
        got = next_deployment(deps, snapshot("key:nobody"), req, NOW, random.Random(seed))
        assert isinstance(got, Pick)
        assert got.deployment.id in BUSY


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_a_disabled_deployment_is_not_probed(strategy: Strategy) -> None:
    deps = pool(drained_enabled=False)
    req = RouteRequest(strategy=strategy, caller="key:0")
    got = next_deployment(deps, snapshot("key:0", probe_due=True), req, NOW, random.Random(0))
    assert isinstance(got, Pick)
    assert (got.deployment.id in BUSY, got.probe) == (True, False)


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_a_pool_of_disabled_deployments_is_blocked_as_disabled(strategy: Strategy) -> None:
    deps = [dep("a", enabled=False), dep("b", enabled=False, priority=1)]
    req = RouteRequest(strategy=strategy, caller="key:0")
    got = next_deployment(deps, snapshot("key:0"), req, NOW, random.Random(0))
    assert isinstance(got, Blocked)
    assert got.reason is BlockReason.DISABLED
    assert [r.cause for r in got.reasons] == [Cause.DISABLED, Cause.DISABLED]


def test_the_status_view_shows_disabled_before_its_circuit() -> None:
    deps = pool(drained_enabled=False)
    statuses = pool_status(deps, snapshot("key:0", probe_due=True), NOW, 600.0)
    assert [(s.status, s.eligible) for s in statuses] == [
        (Status.DISABLED, False),
        (Status.AVAILABLE, True),
        (Status.AVAILABLE, True),
    ]


def test_weight_zero_keeps_000s_meaning_under_metric_strategies() -> None:
    # Weight is not the drain: least-busy still ranks an idle weight-0 deployment first.
    deps = [dep("zero", weight=0), dep("busy-0"), dep("busy-1")]
    req = RouteRequest(strategy=Strategy.LEAST_BUSY, caller="key:0", sticky=False)
    got = next_deployment(deps, snapshot("key:0"), req, NOW, random.Random(0))
    assert isinstance(got, Pick)
    assert got.deployment.id == "zero"
