from __future__ import annotations

import random

import pytest

from edgeproxy.config.router import CircuitSettings
from edgeproxy.routing.backoff import base_delay, retry_delay

S = CircuitSettings()


def test_untried_deployment_needs_no_wait() -> None:
    assert retry_delay(0, CircuitSettings(retry_after_seconds=9), random.Random(1)) == 0.0
    assert retry_delay(0, S, random.Random(1), provider_retry_after=30) == 0.0


def test_base_delay_doubles_from_half_a_second_up_to_eight() -> None:
    assert [base_delay(n) for n in range(1, 8)] == [0.5, 1.0, 2.0, 4.0, 8.0, 8.0, 8.0]
    assert base_delay(10_000) == 8.0


@pytest.mark.parametrize("tries", [1, 2, 3, 4, 5, 9])
def test_jitter_adds_at_most_a_quarter(tries: int) -> None:
    rng = random.Random(tries)
    values = [retry_delay(tries, S, rng) for _ in range(200)]
    base = base_delay(tries)
    assert min(values) >= base
    assert max(values) <= base * 1.25
    assert max(values) > base * 1.1  # jitter actually happens


def test_floors_configured_and_provider_retry_after() -> None:
    rng = random.Random(3)
    configured = CircuitSettings(retry_after_seconds=3)
    assert 3.0 <= retry_delay(1, configured, rng) <= 3.75
    assert 20.0 <= retry_delay(1, S, rng, provider_retry_after=20) <= 25.0
    # Retry-After honoured only up to 60 s.
    assert 60.0 <= retry_delay(1, S, rng, provider_retry_after=600) <= 75.0
    # A short Retry-After never shortens the exponential delay.
    assert 4.0 <= retry_delay(4, S, rng, provider_retry_after=1) <= 5.0
