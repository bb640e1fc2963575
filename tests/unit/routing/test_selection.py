"""Choosing the next deployment: tiers, first pass, sticky bindings, eligibility, Blocked."""

from __future__ import annotations

import random
from collections.abc import Mapping, Set
from dataclasses import replace
from functools import partial

import pytest

from edgeproxy.config.deployment import Deployment
from edgeproxy.config.models import GatewayConfig
from edgeproxy.config.policies import Operation
from edgeproxy.config.router import PoolSettings, Strategy
from edgeproxy.routing.eligibility import Limit, Status, pool_status
from edgeproxy.routing.ordering.registry import REGISTRY
from edgeproxy.routing.selection import Blocked, BlockReason, Pick, RouteRequest, next_deployment
from edgeproxy.routing.snapshot import (
    Binding,
    BindingKey,
    Capacity,
    Circuit,
    CircuitState,
    OpenCause,
    PoolSnapshot,
    Usage,
)

from .builders import dep

NOW = 60_000.0 + 15.0  # 15 s into minute 1000
MINUTE = 1000
REQ = RouteRequest(strategy=Strategy.WEIGHT_PRIORITY, caller="key:x")


def open_circuit(dep_id: str, until: float, cause: OpenCause = OpenCause.TRANSIENT) -> Circuit:
    return Circuit(
        dep_id, CircuitState.OPEN, open_until=until, opened_at=NOW - 1, cause=cause, version=1
    )


def route(
    deps: list[Deployment],
    snap: PoolSnapshot | None,
    req: RouteRequest,
    tried: Mapping[str, int] | Set[str],
    skip: Set[str],
) -> Pick | Blocked:
    snapshot = snap or PoolSnapshot()
    return next_deployment(deps, snapshot, req, NOW, random.Random(0), tried=tried, skip=skip)


def pick(
    deps: list[Deployment],
    snap: PoolSnapshot | None = None,
    req: RouteRequest = REQ,
    *,
    tried: Mapping[str, int] | Set[str] = frozenset(),
    skip: Set[str] = frozenset(),
) -> Pick:
    got = route(deps, snap, req, tried, skip)
    assert isinstance(got, Pick), got
    return got


def blocked(
    deps: list[Deployment],
    snap: PoolSnapshot,
    req: RouteRequest = REQ,
    *,
    skip: Set[str] = frozenset(),
) -> Blocked:
    got = route(deps, snap, req, frozenset(), skip)
    assert isinstance(got, Blocked), got
    return got


def test_higher_priority_tier_first() -> None:
    deps = [dep("backup", priority=0, weight=9), dep("primary", priority=5, weight=1)]
    got = pick(deps)
    assert (got.deployment.id, got.tier, got.strategy, got.tries) == (
        "primary",
        5,
        Strategy.WEIGHT_PRIORITY,
        0,
    )


def test_first_pass_over_untried_before_reusing() -> None:
    deps = [dep("a", priority=1), dep("b", priority=0)]
    assert pick(deps, tried={"a": 1}).deployment.id == "b"  # a lower tier before a reuse
    reuse = pick(deps, tried={"a": 1, "b": 1})
    assert (reuse.deployment.id, reuse.tries) == ("a", 1)
    least = pick(deps, tried={"a": 2, "b": 1})
    assert (least.deployment.id, least.tries) == ("b", 1)
    assert pick(deps, tried={"a"}).deployment.id == "b"  # a set means once each


def test_per_tier_strategy_from_the_config_inheritance_chain() -> None:
    deps = [dep("a", priority=1, weight=1), dep("b", priority=1, weight=4), dep("c", priority=0)]
    config = GatewayConfig(
        deployments=deps,
        pools={
            "gpt": PoolSettings(
                strategy=Strategy.LEAST_BUSY, tier_strategies={1: Strategy.WEIGHT_PRIORITY}
            )
        },
    )
    req = RouteRequest(strategy=partial(config.strategy_for, "gpt"))
    first = pick(deps, req=req)
    assert (first.deployment.id, first.strategy) == ("b", Strategy.WEIGHT_PRIORITY)
    assert first.ranked == ("b", "a")
    later = pick(deps, req=req, tried={"a", "b"})
    assert (later.deployment.id, later.strategy) == ("c", Strategy.LEAST_BUSY)
    mapped = pick(deps, req=RouteRequest(strategy={0: Strategy.LEAST_BUSY}), tried={"a", "b"})
    assert mapped.strategy is Strategy.LEAST_BUSY


def test_single_deployment_pool_skips_the_strategy() -> None:
    only = pick([dep("solo", weight=0)], req=RouteRequest(strategy=Strategy.SIMPLE_SHUFFLE))
    assert (only.deployment.id, only.strategy) == ("solo", None)


def test_operation_and_modalities_filter() -> None:
    deps = [dep("text", weight=5), dep("vision", modalities=frozenset({"text", "image"}))]
    req = RouteRequest(strategy=Strategy.WEIGHT_PRIORITY, modalities=frozenset({"image"}))
    assert pick(deps, req=req).deployment.id == "vision"
    embed = RouteRequest(operation=Operation.IMAGES)
    assert blocked(deps, PoolSnapshot(), embed).reason is BlockReason.INCOMPATIBLE


def test_open_circuit_throttled_domain_and_limits_exclude() -> None:
    deps = [
        dep("open", weight=9),
        dep("dom1", weight=8, failure_domain="acct"),
        dep("dom2", weight=7, failure_domain="acct"),
        dep("rpm", weight=6, rpm_limit=10),
        dep("tpm", weight=5, tpm_limit=1000),
        dep("ok", weight=1, rpm_limit=10),
    ]
    snap = PoolSnapshot(
        circuits={"open": open_circuit("open", NOW + 3)},
        capacities={"acct": Capacity("acct", throttled_until=NOW + 20)},
        usage={
            "rpm": [Usage("rpm", MINUTE, requests=10)],
            "tpm": [Usage("tpm", MINUTE, prompt_tokens=900, completion_tokens=100)],
            "ok": [Usage("ok", MINUTE - 1, requests=50), Usage("ok", MINUTE, requests=9)],
        },
    )
    assert pick(deps, snap).deployment.id == "ok"
    statuses = {s.deployment_id: s for s in pool_status(deps, snap, NOW, 600.0)}
    assert statuses["open"].status is Status.COOLDOWN
    assert statuses["dom2"].limit is Limit.CAPACITY
    assert statuses["dom2"].retry_after == pytest.approx(20.0)
    assert statuses["rpm"].limit is Limit.RPM
    assert statuses["rpm"].retry_after == pytest.approx(45.0)  # the next minute bucket
    assert statuses["tpm"].limit is Limit.TPM
    assert statuses["ok"].status is Status.AVAILABLE


def test_half_open_is_eligible_as_a_probe_unless_the_lease_is_held() -> None:
    deps = [dep("h", weight=9), dep("b")]
    cooled = Circuit("h", CircuitState.OPEN, open_until=NOW - 1, version=2)
    got = pick(deps, PoolSnapshot(circuits={"h": cooled}))
    assert (got.deployment.id, got.probe) == ("h", True)
    held = Circuit(
        "h",
        CircuitState.HALF_OPEN,
        open_until=NOW - 1,
        probe_owner="other",
        probe_until=NOW + 10,
        version=3,
    )
    got = pick(deps, PoolSnapshot(circuits={"h": held}))
    assert (got.deployment.id, got.probe) == ("b", False)


def binding(dep_id: str, expires_at: float = NOW + 100, generation: int = 0) -> Binding:
    return Binding(BindingKey("key:x", "gpt", "openai.chat"), dep_id, expires_at, generation)


def test_valid_binding_goes_first_within_its_tier() -> None:
    # WEIGHT_PRIORITY would pick "heavy"; the binding holds "bound" in the same tier.
    deps = [dep("heavy", weight=5), dep("bound"), dep("backup", priority=-1)]
    got = pick(deps, PoolSnapshot(binding=binding("bound")))
    assert (got.deployment.id, got.sticky, got.strategy) == ("bound", True, None)
    # Not sticky once tried in this request, when expired, when the pool moved on, or when off.
    assert pick(deps, PoolSnapshot(binding=binding("bound")), tried={"bound"}).sticky is False
    expired = PoolSnapshot(binding=binding("bound", expires_at=NOW))
    assert pick(deps, expired).deployment.id == "heavy"
    stale = PoolSnapshot(binding=binding("bound", generation=1), pool_generation=2)
    assert pick(deps, stale).deployment.id == "heavy"
    off = RouteRequest(strategy=Strategy.WEIGHT_PRIORITY, sticky=False)
    assert pick(deps, PoolSnapshot(binding=binding("bound")), req=off).deployment.id == "heavy"


def test_binding_in_a_lower_tier_yields_once_the_higher_tier_recovers() -> None:
    # A failover bound the caller to "backup"; the primary tier is eligible again.
    deps = [dep("primary", priority=2), dep("backup", priority=0)]
    snap = PoolSnapshot(binding=binding("backup"))
    got = pick(deps, snap)
    assert (got.deployment.id, got.sticky) == ("primary", False)
    # While the primary is open the binding holds; half-open, the caller takes the probe.
    down = replace(snap, circuits={"primary": open_circuit("primary", NOW + 5)})
    assert pick(deps, down).deployment.id == "backup"
    assert pick(deps, down).sticky is True
    cooled = replace(snap, circuits={"primary": open_circuit("primary", NOW - 1)})
    assert (pick(deps, cooled).deployment.id, pick(deps, cooled).probe) == ("primary", True)
    # Already tried by this request (it failed): the binding is back in play.
    assert pick(deps, snap, tried={"primary"}).deployment.id == "backup"


def test_binding_yields_to_a_higher_tier_under_every_strategy() -> None:
    deps = [dep("primary", priority=1), dep("primary-2", priority=1), dep("backup")]
    for spec in REGISTRY:
        req = RouteRequest(strategy=spec.name, caller="key:x")
        got = pick(deps, PoolSnapshot(binding=binding("backup")), req)
        assert got.deployment.id.startswith("primary"), spec.name


def test_binding_ignores_a_higher_tier_its_strategy_never_picks() -> None:
    # Weight 0 under a weighted strategy: that tier has nothing to offer, so the binding holds.
    deps = [dep("zero", priority=1, weight=0), dep("backup")]
    req = RouteRequest(strategy=Strategy.SIMPLE_SHUFFLE, caller="key:x")
    got = pick(deps, PoolSnapshot(binding=binding("backup")), req)
    assert (got.deployment.id, got.sticky) == ("backup", True)


def test_binding_to_an_ineligible_deployment_is_ignored() -> None:
    deps = [dep("primary", priority=2), dep("bound", priority=0)]
    snap = PoolSnapshot(
        binding=binding("bound"), circuits={"bound": open_circuit("bound", NOW + 5)}
    )
    assert pick(deps, snap).deployment.id == "primary"


@pytest.mark.parametrize(
    ("strategy", "holds"),
    [
        (Strategy.SIMPLE_SHUFFLE, False),  # 000: weighted-random never picks weight 0
        (Strategy.HEALTH_AWARE, False),  # 000: score times weight
        (Strategy.LEAST_BUSY, True),  # 000: metric strategies ignore weight
        (Strategy.WEIGHT_PRIORITY, True),  # orders by weight, drops none
    ],
)
def test_a_weight_zero_binding_holds_only_where_its_strategy_would_pick_it(
    strategy: Strategy, holds: bool
) -> None:
    deps = [dep("other"), dep("bound", weight=0)]
    req = RouteRequest(strategy=strategy, caller="key:x")
    got = pick(deps, PoolSnapshot(binding=binding("bound")), req)
    assert got.sticky is holds
    assert (got.deployment.id == "bound") is holds


def test_every_circuit_open_is_overloaded_with_the_earliest_retry_after() -> None:
    deps = [dep("a"), dep("b")]
    snap = PoolSnapshot(
        circuits={"a": open_circuit("a", NOW + 30), "b": open_circuit("b", NOW + 4)}
    )
    got = blocked(deps, snap)
    assert got.reason is BlockReason.OVERLOADED
    assert got.retry_after == pytest.approx(4.0)
    assert {s.deployment_id for s in got.statuses} == {"a", "b"}


def test_every_circuit_opened_by_configuration_is_unavailable() -> None:
    deps = [dep("a"), dep("b")]
    snap = PoolSnapshot(
        circuits={
            "a": open_circuit("a", NOW + 300, OpenCause.CONFIGURATION),
            "b": open_circuit("b", NOW + 200, OpenCause.CONFIGURATION),
        }
    )
    assert blocked(deps, snap).reason is BlockReason.UNAVAILABLE
    mixed = PoolSnapshot(
        circuits={
            "a": open_circuit("a", NOW + 300, OpenCause.CONFIGURATION),
            "b": open_circuit("b", NOW + 2),
        }
    )
    assert blocked(deps, mixed).reason is BlockReason.OVERLOADED


def test_capacity_or_limits_as_the_blocker_is_rate_limited() -> None:
    deps = [dep("a", failure_domain="acct"), dep("b", rpm_limit=5)]
    snap = PoolSnapshot(
        capacities={"acct": Capacity("acct", throttled_until=NOW + 50)},
        usage={"b": [Usage("b", MINUTE, requests=5)]},
    )
    got = blocked(deps, snap)
    assert got.reason is BlockReason.RATE_LIMITED
    assert got.retry_after == pytest.approx(45.0)
    # One open circuit plus one throttled: not *every* circuit is open, capacity blocks.
    mixed = PoolSnapshot(
        circuits={"b": open_circuit("b", NOW + 5)},
        capacities={"acct": Capacity("acct", throttled_until=NOW + 50)},
    )
    assert blocked(deps, mixed).reason is BlockReason.RATE_LIMITED


def test_skipped_everywhere_is_exhausted_and_zero_weight_everywhere_unavailable() -> None:
    deps = [dep("a"), dep("b")]
    assert blocked(deps, PoolSnapshot(), skip={"a", "b"}).reason is BlockReason.EXHAUSTED
    zero = [dep("a", weight=0), dep("b", weight=0)]
    shuffle = RouteRequest(strategy=Strategy.SIMPLE_SHUFFLE)
    assert blocked(zero, PoolSnapshot(), shuffle).reason is BlockReason.UNAVAILABLE


def test_zero_weight_tier_falls_through_to_the_next_tier() -> None:
    deps = [dep("off", priority=3, weight=0), dep("on", priority=0)]
    req = RouteRequest(strategy=Strategy.WEIGHTED_RANDOM)
    assert pick(deps, req=req).deployment.id == "on"


def test_a_native_only_request_never_picks_a_deployment_that_needs_a_translation() -> None:
    chat = [dep(f"c{i}", priority=2) for i in range(3)]
    native = dep("n", operations=["responses"])
    req = RouteRequest(operation=Operation.RESPONSES, strategy=Strategy.SIMPLE_SHUFFLE)
    assert pick([*chat, native], req=req).deployment.id.startswith("c")  # translated: tier 2
    native_req = RouteRequest(
        operation=Operation.RESPONSES, strategy=Strategy.SIMPLE_SHUFFLE, native=True
    )
    assert pick([*chat, native], req=native_req).deployment.id == "n"
    blocked = route(chat, None, native_req, frozenset(), frozenset())
    assert isinstance(blocked, Blocked)
    assert blocked.reason is BlockReason.INCOMPATIBLE
    assert {s.status for s in blocked.statuses} == {Status.INCOMPATIBLE}
