"""Operator circuits in the pure core: maintenance windows and manual closes."""

from __future__ import annotations

import random

import pytest

from edgeproxy.config.router import CircuitSettings
from edgeproxy.routing.circuit import (
    AdmissionKind,
    admission,
    effective_state,
    force_close,
    force_open,
    on_failure,
    take_probe,
)
from edgeproxy.routing.faults import FailureClass
from edgeproxy.routing.snapshot import Circuit, CircuitState, OpenCause

S = CircuitSettings()


def test_force_open_blocks_until_the_window_ends_with_its_cause_and_reason() -> None:
    c = force_open(Circuit("d", failures=2, version=4), now=100.0, until=700.0, reason="swap")

    assert (c.state, c.cause, c.reason, c.version, c.failures) == (
        CircuitState.OPEN,
        OpenCause.MAINTENANCE,
        "swap",
        5,
        0,
    )
    gate = admission(c, 100.0)
    assert (gate.kind, gate.retry_after) == (AdmissionKind.BLOCKED, 600.0)
    assert admission(c, 699.9).kind is AdmissionKind.BLOCKED


def test_after_the_window_one_probe_checks_the_deployment() -> None:
    c = force_open(Circuit("d"), now=100.0, until=700.0, reason="swap")

    assert effective_state(c, 700.0) is CircuitState.HALF_OPEN
    leased = take_probe(c, "req-1", 700.0, S)
    assert leased is not None
    assert admission(leased, 700.5).kind is AdmissionKind.BLOCKED  # one probe at a time


def test_failures_during_maintenance_count_nothing() -> None:
    c = force_open(Circuit("d"), now=100.0, until=700.0, reason="swap")

    for started in (50.0, 150.0):
        assert (
            on_failure(
                c,
                FailureClass.TRANSIENT,
                200.0,
                S,
                random.Random(1),
                was_probe=False,
                attempt_started_at=started,
            )
            is None
        )


def test_force_close_routes_at_once_and_forgets_the_reason() -> None:
    c = force_open(Circuit("d"), now=100.0, until=700.0, reason="swap")

    closed = force_close(c, 150.0)

    assert (closed.state, closed.cause, closed.reason, closed.level) == (
        CircuitState.CLOSED,
        None,
        None,
        0,
    )
    assert closed.version == c.version + 1
    assert admission(closed, 150.0).kind is AdmissionKind.ALLOW


def test_a_window_must_end_in_the_future() -> None:
    with pytest.raises(ValueError, match="future"):
        force_open(Circuit("d"), now=100.0, until=100.0, reason="x")
