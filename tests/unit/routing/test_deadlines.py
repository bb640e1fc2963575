from __future__ import annotations

import pytest

from edgeproxy.config.policies import Deadline
from edgeproxy.routing.deadlines import Budget

STREAM = Deadline(response_ms=600_000, idle_ms=300_000, total_ms=3_600_000, max_attempts=3)
JSON = Deadline(response_ms=120_000, total_ms=300_000, max_attempts=2)


def test_remaining_and_expiry() -> None:
    b = Budget.from_deadline(JSON, started_at=1000.0)
    assert b.deadline_at == 1300.0
    assert b.remaining(1000.0) == 300.0
    assert b.remaining(1250.5) == pytest.approx(49.5)
    assert b.remaining(2000.0) == 0.0
    assert not b.expired(1299.9)
    assert b.expired(1300.0)


def test_response_timeout_is_cut_to_the_remaining_budget() -> None:
    b = Budget.from_deadline(JSON, started_at=0.0)
    early = b.timeouts(10.0, JSON)
    assert (early.response, early.idle, early.total) == (120.0, None, 290.0)
    late = b.timeouts(250.0, JSON)
    assert late.response == pytest.approx(50.0)


def test_idle_timeout_comes_from_the_policy_and_never_outlives_the_request() -> None:
    b = Budget.from_deadline(STREAM, started_at=0.0)
    assert b.timeouts(0.0, STREAM).idle == 300.0
    assert b.timeouts(3500.0, STREAM).idle == pytest.approx(100.0)


def test_attempt_count_and_wait_must_fit() -> None:
    b = Budget(started_at=0.0, total_ms=10_000, max_attempts=3)
    assert b.allows_attempt(1.0, attempts_made=2)
    assert not b.allows_attempt(1.0, attempts_made=3)
    assert b.attempts_left(1) == 2
    assert b.attempts_left(5) == 0
    assert b.allows_attempt(5.0, attempts_made=1, wait=4.0)
    assert not b.allows_attempt(5.0, attempts_made=1, wait=5.0)  # the wait eats the rest
    assert not b.allows_attempt(10.0, attempts_made=0)


def test_tightened_by_a_stricter_deployment_policy_never_loosens() -> None:
    b = Budget.from_deadline(STREAM, started_at=0.0)
    tight = b.tightened(JSON)
    assert (tight.total_ms, tight.max_attempts) == (300_000, 2)
    assert Budget.from_deadline(JSON, 0.0).tightened(STREAM) == Budget.from_deadline(JSON, 0.0)
