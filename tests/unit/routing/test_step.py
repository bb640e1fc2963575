"""Every rule of a pool hop, decided by ``next_step`` on a virtual clock (``now=``)."""

from __future__ import annotations

import random

import pytest

from edgeproxy.config.models import FallbackReason
from edgeproxy.config.policies import Deadline
from edgeproxy.config.router import CircuitSettings
from edgeproxy.routing.backoff import MAX_RETRY_AFTER_SECONDS
from edgeproxy.routing.deadlines import Budget
from edgeproxy.routing.faults import Fault, FaultKind
from edgeproxy.routing.refusal import chain_reason
from edgeproxy.routing.selection import BlockReason, RouteRequest
from edgeproxy.routing.snapshot import Capacity, Circuit, CircuitState, PoolSnapshot
from edgeproxy.routing.step import (
    CAPACITY_MARGIN_S,
    AttemptLog,
    Step,
    Stop,
    Try,
    Wait,
    next_step,
)
from edgeproxy.routing.verdict import judge
from tests.unit.routing.builders import dep

NOW = 1_000_000.0
A, B = dep("a"), dep("b")
POOL = [A, B]
SETTINGS = CircuitSettings()
ROUTE = RouteRequest(caller="key:x", sticky=False)


def budget(total_ms: int = 30_000, attempts: int = 3) -> Budget:
    return Budget(started_at=NOW, total_ms=total_ms, max_attempts=attempts)


def step(
    log: AttemptLog,
    *,
    now: float = NOW,
    pool: list = POOL,  # type: ignore[type-arg]
    snapshot: PoolSnapshot | None = None,
    within: Budget | None = None,
    pinned: bool = False,
    settings: CircuitSettings = SETTINGS,
    limits: dict[str, Deadline] | None = None,
) -> Step:
    return next_step(
        pool,
        snapshot or PoolSnapshot(),
        ROUTE,
        log,
        settings,
        within or budget(),
        now=now,
        rng=random.Random(3),
        pinned=pinned,
        limits=limits,
    )


def tried(step_: Step) -> str:
    assert isinstance(step_, Try), step_
    return step_.pick.deployment.id


def http(status: int, retry_after: float | None = None) -> Fault:
    return Fault(FaultKind.HTTP, "x", status, retry_after=retry_after)


def failed(log: AttemptLog, dep_id: str, fault: Fault, at: float = NOW) -> AttemptLog:
    return log.started(dep_id).failed(dep_id, judge(fault), at)


def test_a_fresh_request_tries_at_once() -> None:
    first = step(AttemptLog())
    assert isinstance(first, Try)
    assert first.wait == 0.0


def test_a_transient_failure_moves_to_an_untried_deployment_without_waiting() -> None:
    first = tried(step(AttemptLog()))
    log = failed(AttemptLog(), first, http(503))
    second = step(log)
    assert tried(second) != first
    assert isinstance(second, Try)
    assert second.wait == 0.0


def test_a_request_error_stops_with_the_upstream_answer() -> None:
    log = failed(AttemptLog(), "a", http(400))
    stopped = step(log)
    assert isinstance(stopped, Stop)
    assert stopped.failure.fault == http(400)
    assert chain_reason(stopped.failure) is None  # no fallback either


def test_max_attempts_and_the_total_deadline_stop_the_pool() -> None:
    log = failed(failed(AttemptLog(), "a", http(503)), "b", http(503))
    assert isinstance(step(log, within=budget(attempts=2)), Stop)
    assert isinstance(step(AttemptLog(), now=NOW + 30, within=budget(total_ms=30_000)), Stop)


def test_a_configuration_fault_rules_the_deployment_out_for_the_request() -> None:
    log = failed(AttemptLog(), "a", http(401))
    assert tried(step(log)) == "b"
    log = failed(log, "b", http(503))
    # b is reused (after a backoff); a is never asked again in this request.
    assert tried(step(log, now=NOW + 10)) == "b"


def test_reuse_backs_off_from_the_failure_not_from_now() -> None:
    log = failed(failed(AttemptLog(), "a", http(503)), "b", http(503))
    at_once = step(log)
    assert isinstance(at_once, Try)
    assert 0.5 <= at_once.wait <= 0.625  # first reuse: 0.5 s plus up to 25% jitter
    later = step(log, now=NOW + 0.3)
    assert isinstance(later, Try)
    assert later.wait == pytest.approx(at_once.wait - 0.3)
    assert step(log, now=NOW + 1.0) == Try(later.pick, 0.0)


def test_the_providers_retry_after_is_a_floor_for_the_reuse() -> None:
    log = failed(AttemptLog(), "a", http(503, retry_after=4.0))
    assert isinstance(step(log, pool=[A]), Try)
    wait = step(log, pool=[A])
    assert isinstance(wait, Try)
    assert 4.0 <= wait.wait <= 5.0


def test_a_backoff_that_would_eat_the_deadline_stops_instead() -> None:
    log = failed(AttemptLog(), "a", http(503, retry_after=4.0))
    assert isinstance(step(log, pool=[A], within=budget(total_ms=3_000)), Stop)


def test_an_own_throttle_is_waited_out_when_the_budget_allows() -> None:
    log = failed(AttemptLog(), "a", http(429, retry_after=2.0))
    throttled = PoolSnapshot(capacities={A.domain: Capacity(A.domain, NOW + 2.0)})
    waited = step(log, pool=[A], snapshot=throttled)
    assert waited == Wait(2.0 + CAPACITY_MARGIN_S)
    stopped = step(log, pool=[A], snapshot=throttled, within=budget(total_ms=1_500))
    assert isinstance(stopped, Stop)
    assert stopped.failure.blocked is not None
    assert stopped.failure.blocked.reason is BlockReason.RATE_LIMITED


def test_a_throttle_wait_is_capped() -> None:
    log = failed(AttemptLog(), "a", http(429))
    far = PoolSnapshot(capacities={A.domain: Capacity(A.domain, NOW + 600)})
    waited = step(log, pool=[A], snapshot=far, within=budget(total_ms=900_000))
    assert waited == Wait(MAX_RETRY_AFTER_SECONDS + CAPACITY_MARGIN_S)


def test_someone_elses_throttle_is_not_waited_for() -> None:
    throttled = PoolSnapshot(capacities={A.domain: Capacity(A.domain, NOW + 2.0)})
    stopped = step(AttemptLog(), pool=[A], snapshot=throttled)
    assert isinstance(stopped, Stop)
    assert stopped.failure.blocked is not None
    assert stopped.failure.fault is None
    assert chain_reason(stopped.failure) is FallbackReason.GENERAL


def test_every_circuit_open_blocks_as_overloaded() -> None:
    open_ = {d.id: Circuit(d.id, CircuitState.OPEN, open_until=NOW + 5, version=1) for d in POOL}
    stopped = step(AttemptLog(), snapshot=PoolSnapshot(circuits=open_))
    assert isinstance(stopped, Stop)
    assert stopped.failure.blocked is not None
    assert stopped.failure.blocked.reason is BlockReason.OVERLOADED


def test_a_skipped_deployment_is_not_picked_and_rpm_refusal_is_remembered() -> None:
    log = AttemptLog().skipped("a", rate_limited=True)
    assert tried(step(log)) == "b"
    stopped = step(log.skipped("b"))
    assert isinstance(stopped, Stop)
    assert stopped.failure.rate_limited


def test_a_pin_bypasses_open_circuits_and_stops_once_ruled_out() -> None:
    open_a = PoolSnapshot(circuits={"a": Circuit("a", CircuitState.OPEN, open_until=NOW + 5)})
    assert tried(step(AttemptLog(), pool=[A], snapshot=open_a, pinned=True)) == "a"
    log = failed(AttemptLog(), "a", http(403))
    stopped = step(log, pool=[A], pinned=True)
    assert isinstance(stopped, Stop)
    assert stopped.failure.blocked is not None
    assert stopped.failure.blocked.reason is BlockReason.EXHAUSTED


def test_one_counted_failure_per_request_and_deployment() -> None:
    log = AttemptLog()
    assert log.counts_failure("a")
    log = failed(log, "a", http(503))
    assert not log.counts_failure("a")
    assert log.counts_failure("b")


def test_the_log_is_immutable() -> None:
    log = AttemptLog()
    log.started("a").skipped("b")
    assert log == AttemptLog()


@pytest.mark.parametrize("kind", [FaultKind.TIMEOUT, FaultKind.IDLE])
def test_a_silent_route_is_left_at_once_and_not_retried(kind: FaultKind) -> None:
    log = failed(AttemptLog(), "a", Fault(kind, "silent"))
    assert tried(step(log)) == "b"  # no wait: b is untried
    log = failed(log, "b", http(503))
    # b may be reused after its backoff; a, which went silent, never again in this request.
    again = step(log, now=NOW + 20)
    assert tried(again) == "b"
    only_a = failed(AttemptLog(), "a", Fault(kind, "silent"))
    assert isinstance(step(only_a, pool=[A]), Stop)


def test_a_deployments_own_max_attempts_bounds_its_retries() -> None:
    one = Deadline(response_ms=1000, total_ms=30_000, max_attempts=1)
    log = failed(AttemptLog(), "a", http(503))
    assert isinstance(step(log, pool=[A], limits={"a": one}), Stop)
    # Without the override the pool budget (3 attempts) allows a reuse of a.
    assert tried(step(log, pool=[A], now=NOW + 20)) == "a"
    # Other deployments keep the pool's budget.
    assert tried(step(log, limits={"a": one})) == "b"


def test_a_deployments_own_total_ms_bounds_its_attempts() -> None:
    short = Deadline(response_ms=1000, total_ms=2_000, max_attempts=3)
    log = failed(AttemptLog(), "a", http(503), at=NOW + 1)
    assert isinstance(step(log, pool=[A], now=NOW + 2.5, limits={"a": short}), Stop)
    assert isinstance(step(AttemptLog(), pool=[A], now=NOW + 2.5, limits={"a": short}), Stop)
    assert tried(step(AttemptLog(), pool=[A], now=NOW + 1.5, limits={"a": short})) == "a"
    # A pin obeys the deployment's own limits too.
    assert isinstance(step(log, pool=[A], now=NOW + 2.5, limits={"a": short}, pinned=True), Stop)


def test_a_gateway_failure_moves_on_without_counting_against_the_deployment() -> None:
    from edgeproxy.routing.verdict import CREDENTIAL_UNAVAILABLE

    verdict = judge(CREDENTIAL_UNAVAILABLE)
    assert verdict.cls.value == "gateway"
    assert verdict.tries_another
    assert verdict.rules_out
    assert not verdict.lowers_health
    assert not verdict.clears_binding
    assert verdict.fallback is FallbackReason.GENERAL
    log = AttemptLog().started("a").failed("a", verdict, NOW)
    assert tried(step(log)) == "b"
    assert isinstance(step(log, pool=[A], now=NOW + 20), Stop)
