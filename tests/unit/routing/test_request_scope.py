"""Request-scoped failures: the rule (``verdict.request_scope``) on a virtual clock (``now=``)."""

from __future__ import annotations

import random

from edgeproxy.config.models import FallbackReason
from edgeproxy.config.router import CircuitSettings
from edgeproxy.routing.deadlines import Budget
from edgeproxy.routing.faults import Fault, FaultKind
from edgeproxy.routing.refusal import chain_reason
from edgeproxy.routing.selection import RouteRequest
from edgeproxy.routing.snapshot import PoolSnapshot, Second, Usage
from edgeproxy.routing.step import AttemptLog, Step, Stop, Try, next_step
from edgeproxy.routing.verdict import EVIDENCE_WINDOW_S, attempt_failed, judge, request_scope

from .builders import dep

NOW = 1_000_020.0  # 20 s into minute 16667
POOL = [dep("a"), dep("b")]
CUT = Fault(FaultKind.TRUNCATED, "the stream ended before a finish reason")
TOO_LONG = Fault(FaultKind.HTTP, "the prompt is too long for the context window", 500)


def served(*ids: str, at: float = NOW - 5) -> PoolSnapshot:
    """A pool whose ``ids`` answered another request at ``at``."""
    minute = int(at // 60)
    sample = {int(at - minute * 60): Second(successes=1, latency_ms=80)}
    return PoolSnapshot(usage={i: [Usage(i, minute, successes=1, seconds=sample)] for i in ids})


def fail(
    log: AttemptLog,
    dep_id: str,
    fault: Fault,
    snapshot: PoolSnapshot,
    at: float = NOW,
    probe: bool = False,
) -> AttemptLog:
    failed = attempt_failed(snapshot, dep_id, judge(fault), at, at - 0.2, probe)
    return log.started(dep_id).judged(failed)


def step(log: AttemptLog, snapshot: PoolSnapshot, now: float = NOW) -> Step:
    return next_step(
        POOL,
        snapshot,
        RouteRequest(caller="key:x", sticky=False),
        log,
        CircuitSettings(),
        Budget(started_at=NOW - 1, total_ms=60_000, max_attempts=3),
        now=now,
        rng=random.Random(5),
    )


def test_the_same_cut_stream_on_two_serving_deployments_ends_the_request_uncounted() -> None:
    pool = served("a", "b")
    log = fail(AttemptLog(), "a", CUT, pool)
    assert log.counted == frozenset()  # deferred: the request may be the cause
    assert isinstance(step(log, pool), Try)  # one deployment proves nothing yet
    log = fail(log, "b", CUT, pool, at=NOW + 1)
    stopped = step(log, pool, now=NOW + 1)
    assert isinstance(stopped, Stop)  # no third attempt: the pattern is clear
    scope = stopped.failure.scope
    assert scope is not None
    assert scope.deployments == {"a", "b"}
    assert stopped.failure.fault is not None
    assert stopped.failure.fault.status == 502
    assert stopped.failure.fault.code == "request_failed_on_every_deployment"
    assert chain_reason(stopped.failure) is None  # another model would get the same body
    assert log.counted == frozenset()


def test_a_length_shaped_answer_everywhere_is_the_clients_400_with_the_context_chain() -> None:
    pool = served("a", "b")
    log = fail(fail(AttemptLog(), "a", TOO_LONG, pool), "b", TOO_LONG, pool)
    scope = request_scope(log.failures, NOW)
    assert scope is not None
    assert (scope.fault.status, scope.fault.code) == (400, "context_length_exceeded")
    assert scope.verdict.fallback is FallbackReason.CONTEXT_WINDOW
    assert not scope.verdict.lowers_health


def test_a_pool_nobody_is_served_by_counts_every_failure_at_once() -> None:
    pool = PoolSnapshot()  # down for every caller: no answers in the read
    log = fail(fail(AttemptLog(), "a", http(500), pool), "b", http(500), pool)
    assert request_scope(log.failures, NOW) is None
    assert log.counted == {"a", "b"}
    assert log.pending() == ()


def test_evidence_older_than_the_window_does_not_defer() -> None:
    pool = served("a", "b", at=NOW - EVIDENCE_WINDOW_S - 1)
    log = fail(AttemptLog(), "a", CUT, pool)
    assert log.counted == {"a"}
    fresh = served("a", "b", at=NOW - EVIDENCE_WINDOW_S + 1)
    assert fail(AttemptLog(), "a", CUT, fresh).counted == frozenset()


def test_evidence_that_went_stale_by_the_requests_end_counts_the_failures() -> None:
    pool = served("a", "b", at=NOW - 10)
    log = fail(fail(AttemptLog(), "a", CUT, pool), "b", CUT, pool)
    assert request_scope(log.failures, NOW) is not None
    later = NOW - 10 + EVIDENCE_WINDOW_S + 1  # the virtual clock moved past the evidence
    assert request_scope(log.failures, later) is None
    assert [f.deployment_id for f in log.pending()] == ["a", "b"]


def test_different_failures_or_one_deployment_are_the_deployments_own() -> None:
    pool = served("a", "b")
    mixed = fail(fail(AttemptLog(), "a", CUT, pool), "b", http(500), pool)
    assert request_scope(mixed.failures, NOW) is None
    assert [f.deployment_id for f in mixed.pending()] == ["a", "b"]  # both count at the end
    twice = fail(fail(AttemptLog(), "a", http(500), pool), "a", http(500), pool)
    assert request_scope(twice.failures, NOW) is None
    assert len(twice.pending()) == 1  # at most one count per request and deployment


def test_failures_no_request_can_cause_count_at_once() -> None:
    pool = served("a", "b")
    refused = Fault(FaultKind.CONNECT, "connection refused")
    timeout = Fault(FaultKind.TIMEOUT, "no answer in time")
    log = fail(fail(AttemptLog(), "a", refused, pool), "b", refused, pool)
    assert log.counted == {"a", "b"}
    assert request_scope(log.failures, NOW) is None
    assert fail(AttemptLog(), "a", timeout, pool).counted == {"a"}
    assert fail(AttemptLog(), "a", CUT, pool, probe=True).counted == {"a"}  # the probe's own test


def http(status: int) -> Fault:
    return Fault(FaultKind.HTTP, "Internal server error", status)
