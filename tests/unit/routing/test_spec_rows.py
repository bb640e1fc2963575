"""Spec rows issue 24 found partial, now whole: pure rules, called with ``now=`` where time counts."""

from __future__ import annotations

import random
from dataclasses import replace

from edgeproxy.config.router import Strategy
from edgeproxy.routing.affinity import after_success, should_renew
from edgeproxy.routing.faults import Fault, FaultKind
from edgeproxy.routing.ordering.strategies import StrategyInputs, order
from edgeproxy.routing.quota import FETCHER_AGE_S, HEADERS, worth_recording
from edgeproxy.routing.selection import Blocked, BlockReason, RouteRequest, next_deployment
from edgeproxy.routing.snapshot import (
    Binding,
    BindingKey,
    Circuit,
    CircuitState,
    OpenCause,
    PoolSnapshot,
    Quota,
    QuotaStatus,
)
from edgeproxy.routing.verdict import judge

from .builders import dep

NOW = 60_000.0
KEY = BindingKey(caller="key:abc", pool="gpt", protocol="openai.chat")


def inputs(caller: str = "", protocol: str = "") -> StrategyInputs:
    return StrategyInputs(PoolSnapshot(), 1000, caller, protocol=protocol)


def test_price_based_ranks_deployments_priced_by_input_only() -> None:
    deps = [
        dep("pricey", input_price_per_mtok=0.13, operations=["embeddings"]),
        dep("cheap", input_price_per_mtok=0.02, operations=["embeddings"]),
    ]
    for seed in range(20):
        ranked = order(Strategy.PRICE_BASED, deps, inputs(), random.Random(seed))
        assert [d.id for d in ranked] == ["cheap", "pricey"]


def test_price_based_does_not_compare_input_only_with_input_plus_output() -> None:
    deps = [
        dep("input-only", input_price_per_mtok=0.01, weight=1),
        dep("both", input_price_per_mtok=5, output_price_per_mtok=15, weight=1),
    ]
    firsts = {
        order(Strategy.PRICE_BASED, deps, inputs(), random.Random(seed))[0].id for seed in range(40)
    }
    assert firsts == {"input-only", "both"}  # mixed bases: the weighted draw, not a ranking


def test_hash_affinity_keys_on_the_protocol_too() -> None:
    deps = [dep(f"d{i}") for i in range(8)]

    def first(caller: str, protocol: str) -> str:
        return order(Strategy.HASH_AFFINITY, deps, inputs(caller, protocol), random.Random(0))[0].id

    # Stable per (caller, protocol)...
    assert first("key:alice", "openai.chat") == first("key:alice", "openai.chat")
    # ...and the protocol is part of the key: over many callers, the preferred
    # deployment of one protocol is not always the other's.
    callers = [f"key:c{i}" for i in range(40)]
    differs = [c for c in callers if first(c, "openai.chat") != first(c, "anthropic.messages")]
    assert len(differs) > 20  # 7/8 of them expected to differ


def binding(expires_at: float) -> Binding:
    return Binding(KEY, "a", expires_at=expires_at, generation=0, version=1)


def test_a_success_renews_the_binding_so_it_lapses_a_full_ttl_after_it() -> None:
    ttl = 3600.0
    written = binding(expires_at=0.0 + ttl)  # written at t=0
    # The audit's case: the last success at t=1699 must carry the binding to t=5299.
    renewed = after_success(KEY, written, "a", now=1699.0, ttl=ttl, pool_generation=0)
    assert renewed is not None
    assert renewed.expires_at == 1699.0 + ttl
    # Renewal writes are coalesced only within RENEW_SLACK_S of the last write.
    assert not should_renew(written, now=30.0, ttl=ttl)
    assert after_success(KEY, written, "a", now=30.0, ttl=ttl, pool_generation=0) is None
    assert should_renew(written, now=61.0, ttl=ttl)


def test_a_short_ttl_is_still_renewed_past_half_of_it() -> None:
    written = binding(expires_at=60.0)  # ttl 60 written at t=0
    assert not should_renew(written, now=29.0, ttl=60.0)
    assert should_renew(written, now=31.0, ttl=60.0)


def test_a_model_missing_404_keeps_the_binding() -> None:
    missing = Fault(FaultKind.HTTP, "The model `x` does not exist", 404, code="model_not_found")
    verdict = judge(missing)
    assert verdict.lowers_health  # the deployment is quarantined (configuration)
    assert not verdict.clears_binding  # 003: "A 400, 404 ... keeps it"
    assert judge(Fault(FaultKind.HTTP, "denied", 401)).clears_binding


def test_a_drained_deployment_does_not_hide_a_circuit_that_reopens_soon() -> None:
    deps = [dep("drained", weight=0), dep("open")]
    snap = PoolSnapshot(
        circuits={
            "open": Circuit(
                "open",
                CircuitState.OPEN,
                open_until=NOW + 5,
                opened_at=NOW - 1,
                cause=OpenCause.TRANSIENT,
                version=1,
            )
        }
    )
    got = next_deployment(deps, snap, RouteRequest(), NOW, random.Random(0))
    assert isinstance(got, Blocked)
    assert got.reason is BlockReason.OVERLOADED  # 503 model_overloaded...
    assert got.retry_after == 5.0  # ...with the honest Retry-After
    # Drained everywhere: nothing will free up by itself.
    drained = [dep("drained", weight=0), dep("also", weight=0)]
    only = next_deployment(drained, snap, RouteRequest(), NOW, random.Random(0))
    assert isinstance(only, Blocked)
    assert (only.reason, only.retry_after) == (BlockReason.UNAVAILABLE, None)


def test_header_quota_does_not_overwrite_a_fresh_fetcher_reading() -> None:
    daily = Quota("cred", "requests", 4000, 5000, NOW + 80_000, "acme-daily", NOW - 100)
    minute = Quota("cred", "requests", 40, 500, NOW + 60, HEADERS, NOW)  # runs low: 8 %
    assert not worth_recording(minute, QuotaStatus("cred", (daily,)), NOW)
    assert not worth_recording(minute, QuotaStatus("cred", (daily,)), NOW + 400)
    # A fetcher reading nobody refreshed for FETCHER_AGE_S gives way.
    assert worth_recording(minute, QuotaStatus("cred", (daily,)), NOW - 100 + FETCHER_AGE_S)
    # An answer that succeeded while the fetcher said spent shows quota left: recorded.
    spent = replace(daily, remaining=0)
    assert worth_recording(minute, QuotaStatus("cred", (spent,)), NOW)
