"""Provider 429s in the pure core, on a virtual clock: when a throttled deployment is asked
again, how long a request is held, and what its client is told when the request ends."""

from __future__ import annotations

import itertools
import random
from dataclasses import dataclass

import pytest

from edgeproxy.config.router import CircuitSettings
from edgeproxy.errors import EdgeproxyError
from edgeproxy.routing.backoff import retry_delay
from edgeproxy.routing.circuit import throttle_until
from edgeproxy.routing.deadlines import Budget
from edgeproxy.routing.faults import FailureClass, Fault, FaultKind
from edgeproxy.routing.refusal import RouteFailure, final_error
from edgeproxy.routing.selection import RouteRequest
from edgeproxy.routing.snapshot import Capacity, PoolSnapshot
from edgeproxy.routing.step import AttemptLog, PoolFailure, Stop, Try, Wait, next_step
from edgeproxy.routing.verdict import judge
from tests.unit.routing.builders import dep

NOW = 1_000_000.0
A = dep("a")
ROUTE = RouteRequest(caller="key:x", sticky=False)
SETTINGS = CircuitSettings()  # throttle_cooldown_seconds 5, the spec's default: a floor
EXACT = CircuitSettings(throttle_exact_retry_after=True)  # the interactive preset's rule
CALL_S = 0.05  # how long each simulated upstream call takes


def throttle(retry_after: float | None) -> Fault:
    return Fault(FaultKind.HTTP, "Rate limit reached.", 429, retry_after=retry_after)


@dataclass
class Outcome:
    calls: list[float]  # when each upstream call started
    ended_at: float
    failure: PoolFailure | None  # None: the last call succeeded


def run(
    answers: list[Fault | None],
    *,
    attempts: int = 3,
    total_ms: int = 30_000,
    settings: CircuitSettings = SETTINGS,
    seed: int = 1,
) -> Outcome:
    """Carry ``next_step`` out the way the router does, on a virtual clock, for one pool of
    one deployment that answers ``answers`` in turn (None: success; the last one repeats)."""
    now, log, snapshot = NOW, AttemptLog(), PoolSnapshot()
    budget = Budget(started_at=NOW, total_ms=total_ms, max_attempts=attempts)
    rng = random.Random(seed)
    calls: list[float] = []
    while True:
        step = next_step([A], snapshot, ROUTE, log, settings, budget, now=now, rng=rng)
        if isinstance(step, Stop):
            return Outcome(calls, now, step.failure)
        if isinstance(step, Wait):
            now += step.seconds
            continue
        assert isinstance(step, Try)
        now += step.wait
        calls.append(now)
        log = log.started(A.id)
        now += CALL_S
        fault = answers[min(len(calls) - 1, len(answers) - 1)]
        if fault is None:
            return Outcome(calls, now, None)
        verdict = judge(fault)
        if verdict.cls is FailureClass.THROTTLE:  # the outcome write opens the capacity circuit
            until = throttle_until(now, fault.retry_after, settings)
            snapshot = PoolSnapshot(capacities={A.domain: Capacity(A.domain, until)})
        log = log.failed(A.id, verdict, now)


def refusal(outcome: Outcome) -> EdgeproxyError:
    assert outcome.failure is not None
    pool = outcome.failure
    return final_error(
        RouteFailure(primary=pool, last_fault=pool.fault, failures=[pool]), now=outcome.ended_at
    )


@pytest.mark.parametrize("seed", range(20))
def test_a_shorter_retry_after_than_the_throttle_cooldown_waits_the_cooldown(seed: int) -> None:
    # 000: throttle_cooldown_seconds (5) is the floor; the provider's 2 s does not shorten it.
    outcome = run([throttle(2.0), None], seed=seed)
    assert outcome.failure is None
    first, second = outcome.calls
    gap = second - (first + CALL_S)  # from the 429's arrival to the next call
    assert 5.0 <= gap <= 5.05


def test_a_longer_retry_after_than_the_throttle_cooldown_lengthens_it() -> None:
    outcome = run([throttle(8.0), None])
    first, second = outcome.calls
    assert 8.0 <= second - (first + CALL_S) <= 8.05
    # Honoured up to 60 s, never past it.
    capped = run([throttle(600.0), None], total_ms=120_000)
    first, second = capped.calls
    assert 60.0 <= second - (first + CALL_S) <= 60.05


@pytest.mark.parametrize("seed", range(20))
def test_an_exact_retry_after_is_followed_sooner_than_the_cooldown(seed: int) -> None:
    # throttle_exact_retry_after (interactive): 2 s is what the provider asked, so 2 s.
    outcome = run([throttle(2.0), None], settings=EXACT, seed=seed)
    assert outcome.failure is None
    first, second = outcome.calls
    gap = second - (first + CALL_S)
    assert 2.0 <= gap <= 2.05  # no sooner, and no jitter added to the provider's wait


def test_a_429_naming_no_wait_waits_the_throttle_cooldown() -> None:
    for settings in (SETTINGS, EXACT):
        outcome = run([throttle(None), None], settings=settings)
        first, second = outcome.calls
        assert 5.0 <= second - (first + CALL_S) <= 5.05


def test_persistent_429s_spend_the_attempts_at_the_providers_pace_and_answer_at_once() -> None:
    outcome = run([throttle(2.0)], settings=EXACT)
    assert len(outcome.calls) == 3
    gaps = [b - (a + CALL_S) for a, b in itertools.pairwise(outcome.calls)]
    assert all(2.0 <= g <= 2.05 for g in gaps), gaps
    # Answered as soon as the last 429 came back: no wait after it.
    assert outcome.ended_at == pytest.approx(outcome.calls[-1] + CALL_S)
    error = refusal(outcome)
    assert error.status == 429
    assert error.retry_after == pytest.approx(2.0)  # the wait left, from now
    assert error.retries_spent  # the client must not repeat the gateway's retries


def test_persistent_429s_under_the_floor_are_paced_and_answered_by_the_cooldown() -> None:
    outcome = run([throttle(2.0)])
    assert len(outcome.calls) == 3
    gaps = [b - (a + CALL_S) for a, b in itertools.pairwise(outcome.calls)]
    assert all(5.0 <= g <= 5.05 for g in gaps), gaps
    error = refusal(outcome)
    assert error.retry_after == pytest.approx(5.0)  # when the capacity circuit closes


def test_the_wait_left_counts_from_when_the_answer_is_given() -> None:
    outcome = run([throttle(2.0)], settings=EXACT)
    assert outcome.failure is not None
    assert outcome.failure.retry_at is not None
    later = final_error(
        RouteFailure(outcome.failure, outcome.failure.fault, [outcome.failure]),
        now=outcome.ended_at + 0.5,
    )
    assert later.retry_after == pytest.approx(1.5)


def test_a_request_that_could_not_retry_lets_its_client_do_so() -> None:
    # A 30 s Retry-After does not fit a 27 s budget: one call, and the client may retry
    # itself once the wait is over (it has repeated nothing yet).
    outcome = run([throttle(30.0)], total_ms=27_000)
    assert len(outcome.calls) == 1
    error = refusal(outcome)
    assert error.retry_after == pytest.approx(30.0)
    assert not error.retries_spent
    # With one attempt allowed, likewise.
    single = refusal(run([throttle(2.0)], attempts=1))
    assert not single.retries_spent


def test_a_hold_never_outlasts_the_budget() -> None:
    # 10 s waits in a 15 s budget: the second call fits, a third would end past the deadline.
    outcome = run([throttle(10.0)], total_ms=15_000)
    assert len(outcome.calls) == 2
    assert outcome.ended_at - NOW < 15.0
    assert refusal(outcome).retries_spent  # it retried once for the client already


def test_only_a_throttle_is_marked_spent_here() -> None:
    transient = Fault(FaultKind.HTTP, "boom", 500)
    outcome = run([transient])
    assert len(outcome.calls) == 3
    assert not refusal(outcome).retries_spent


def test_the_reuse_floor_of_a_providers_wait_is_exact_and_the_own_backoff_jittered() -> None:
    waits = {retry_delay(1, SETTINGS, random.Random(s), provider_retry_after=4.0) for s in range(9)}
    assert waits == {4.0}
    own = {retry_delay(3, SETTINGS, random.Random(s)) for s in range(9)}
    assert len(own) > 1
    assert all(2.0 <= w <= 2.5 for w in own)
