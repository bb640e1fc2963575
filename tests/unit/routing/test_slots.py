"""Capacity caps in the pure core: a deployment with every slot held is skipped like one
at its rpm limit, a pool blocked only by full slots waits (bounded), then answers 429."""

from __future__ import annotations

import random

from edgeproxy.routing.eligibility import PARALLEL_RETRY_AFTER_S, Limit, Status, assess
from edgeproxy.routing.faults import Fault, FaultKind
from edgeproxy.routing.refusal import RouteFailure, final_error
from edgeproxy.routing.selection import Blocked, RouteRequest, next_deployment
from edgeproxy.routing.slots import at_capacity, poll_delay, slot_order
from edgeproxy.routing.snapshot import PoolSnapshot
from edgeproxy.routing.step import AttemptLog

from .builders import dep

NOW = 1_700_000_000.0
MINUTE = int(NOW // 60)


def held(*untils: float) -> PoolSnapshot:
    return PoolSnapshot(slots={"a": dict(enumerate(untils))})


def test_a_deployment_with_every_slot_held_is_rate_limited_by_its_cap() -> None:
    capped = dep("a", max_parallel_requests=2)
    verdict = assess(capped, held(NOW + 5, NOW + 5), NOW, MINUTE)
    assert (verdict.status, verdict.limit, verdict.eligible) == (
        Status.RATE_LIMITED,
        Limit.PARALLEL,
        False,
    )
    assert verdict.retry_after == PARALLEL_RETRY_AFTER_S
    assert assess(capped, held(NOW + 5), NOW, MINUTE).eligible  # one of two is free
    assert assess(capped, held(NOW - 1, NOW + 5), NOW, MINUTE).eligible  # one lapsed
    assert assess(dep("a"), held(NOW + 5, NOW + 5), NOW, MINUTE).eligible  # no cap


def test_a_pool_whose_only_deployment_is_full_stops_at_capacity_and_answers_429() -> None:
    pool = [dep("a", max_parallel_requests=1), dep("b", max_parallel_requests=1)]
    snapshot = PoolSnapshot(slots={"a": {0: NOW + 9}, "b": {0: NOW + 9}})
    pick = next_deployment(pool, snapshot, RouteRequest(), NOW, random.Random(0))
    assert isinstance(pick, Blocked)
    failure = AttemptLog().failure(pick)
    assert at_capacity(failure)
    error = final_error(RouteFailure(primary=failure, last_fault=None, failures=[failure]), now=NOW)
    assert (error.status, error.code, error.retry_after) == (429, "rate_limit_exceeded", 1.0)


def test_a_slot_lost_at_the_write_is_a_skip_that_a_wait_gives_back() -> None:
    log = AttemptLog().skipped("a", full=True)
    assert "a" in log.skip
    assert at_capacity(log.failure())
    error = final_error(RouteFailure(primary=log.failure(), last_fault=None), now=NOW)
    assert (error.status, error.retry_after) == (429, PARALLEL_RETRY_AFTER_S)
    assert "a" not in log.reopened().skip
    assert not log.skipped("b", rate_limited=True).reopened().skip - {"b"}


def test_an_upstream_answer_is_never_waited_out_as_capacity() -> None:
    log = AttemptLog().skipped("a", full=True)
    failed = log.failure()
    fault = Fault(FaultKind.HTTP, "boom", status=500)
    assert not at_capacity(type(failed)(fault=fault, at_capacity=True))


def test_polls_back_off_and_never_pass_the_wait() -> None:
    delays, waited, polls = [], 0.0, 0
    while (d := poll_delay(polls, waited, 2.0)) is not None:
        delays.append(d)
        waited += d
        polls += 1
    assert delays[:4] == [0.05, 0.1, 0.2, 0.4]
    assert max(delays) == 0.5
    assert abs(sum(delays) - 2.0) < 1e-9
    assert poll_delay(0, 0.0, 0.0) is None


def test_slots_seen_free_are_tried_first_then_the_rest() -> None:
    order = slot_order([3, 1], 4, random.Random(2))
    assert sorted(order[:2]) == [1, 3]
    assert sorted(order[2:]) == [0, 2]
