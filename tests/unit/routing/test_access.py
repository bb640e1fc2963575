"""Client-key rules and key reservation by role (``min_role``), decided from plain values."""

from __future__ import annotations

import random

import pytest

from edgeproxy.config.deployment import Deployment
from edgeproxy.config.roles import Role
from edgeproxy.errors import QuotaExceeded, RateLimited
from edgeproxy.routing.access import (
    ClientKey,
    KeyRefusal,
    cost_usd,
    display_prefix,
    refusal,
    seconds_to_next_minute,
)
from edgeproxy.routing.refusal import RouteFailure, chain_reason, final_error
from edgeproxy.routing.selection import Blocked, BlockReason, Pick, RouteRequest, next_deployment
from edgeproxy.routing.snapshot import PoolSnapshot, Usage
from edgeproxy.routing.step import PoolFailure

from .builders import dep

NOW = 60_000.0 + 15.0  # 15 s into minute 1000
MINUTE = 1000
RESERVED = dep("reserved", min_role=Role.PRO)
SHARED = dep("shared", rpm_limit=10)


def pick(
    role: Role, snapshot: PoolSnapshot | None = None, deps: list[Deployment] | None = None
) -> Pick | Blocked:
    pool = deps if deps is not None else [SHARED, RESERVED]
    request = RouteRequest(caller="key:x", role=role)
    return next_deployment(pool, snapshot or PoolSnapshot(), request, NOW, random.Random(0))


def test_roles_are_ordered() -> None:
    assert [r.rank for r in (Role.FREE, Role.PRO, Role.INTERNAL, Role.ADMIN)] == [0, 1, 2, 3]
    assert Role.INTERNAL.at_least(Role.PRO)
    assert not Role.FREE.at_least(Role.PRO)


def test_an_entitled_caller_spends_the_reserved_capacity_first() -> None:
    for role in (Role.PRO, Role.INTERNAL, Role.ADMIN):
        chosen = pick(role)
        assert isinstance(chosen, Pick)
        assert chosen.deployment.id == "reserved"


def test_a_lower_caller_never_sees_the_reserved_deployment() -> None:
    chosen = pick(Role.FREE)
    assert isinstance(chosen, Pick)
    assert chosen.deployment.id == "shared"
    # The shared one at its limit: 429 as if the reserved capacity did not exist.
    full = PoolSnapshot(usage={"shared": [Usage("shared", MINUTE, requests=10)]})
    blocked = pick(Role.FREE, full)
    assert isinstance(blocked, Blocked)
    assert blocked.reason is BlockReason.RATE_LIMITED
    assert blocked.retry_after == pytest.approx(45.0)
    assert [s.deployment_id for s in blocked.statuses] == ["shared"]
    assert isinstance(pick(Role.PRO, full), Pick)


def test_a_pool_reserved_entirely_is_a_429_and_leads_to_the_fallback_chain() -> None:
    blocked = pick(Role.FREE, deps=[RESERVED])
    assert isinstance(blocked, Blocked)
    assert blocked.reason is BlockReason.RESERVED
    failure = PoolFailure(blocked=blocked)
    assert chain_reason(failure) is not None  # a fallback model may still serve it
    error = final_error(RouteFailure(primary=failure, last_fault=None, failures=[failure]), now=0.0)
    assert isinstance(error, RateLimited)
    assert (error.status, error.code) == (429, "rate_limit_exceeded")


def test_key_refusals() -> None:
    key = ClientKey("d" * 64, "k")
    assert refusal(key, NOW) is None
    assert refusal(ClientKey("d" * 64, "k", revoked=True), NOW) is KeyRefusal.REVOKED
    assert refusal(ClientKey("d" * 64, "k", expires_at=NOW), NOW) is KeyRefusal.EXPIRED
    assert refusal(ClientKey("d" * 64, "k", expires_at=NOW + 1), NOW) is None
    assert key.id == "d" * 16
    assert display_prefix("ep-abcdefghijklmnop") == "ep-abcdefgh..."


def test_per_minute_limits_reset_at_the_next_minute() -> None:
    assert seconds_to_next_minute(NOW) == 45.0
    assert QuotaExceeded("x").body()["error"]["code"] == "insufficient_quota"


def test_cost_is_usage_times_the_deployments_prices() -> None:
    priced = dep("p", input_price_per_mtok=2.0, output_price_per_mtok=10.0)
    assert cost_usd(priced, 500_000, 100_000) == pytest.approx(2.0)
    assert cost_usd(dep("free"), 500_000, 100_000) == 0.0
