"""Health scores from usage buckets: neutral without data, EWMAs over per-minute means."""

from __future__ import annotations

import pytest

from edgeproxy.routing.health import ALPHA, health_from_usage, window
from edgeproxy.routing.snapshot import Usage


def bucket(minute: int, successes: int, failures: int = 0, latency_ms: int = 0) -> Usage:
    return Usage(
        "d",
        minute,
        successes=successes,
        failures=failures,
        latency_ms_sum=latency_ms * successes,
        output_tokens_per_s_sum=50.0 * successes,
    )


def test_no_attempts_is_neutral_not_perfect() -> None:
    health = health_from_usage("d", [], now=600.0)
    assert (health.score, health.ewma_latency_ms, health.ewma_tokens_per_s) == (0.5, None, None)
    assert health.updated_at == 600.0


def test_score_is_the_success_ratio_over_the_window() -> None:
    health = health_from_usage("d", [bucket(1, 6, 2), bucket(2, 2, 0)], now=180.0)
    assert health.score == pytest.approx(8 / 10)


def test_latency_ewma_weights_recent_minutes_and_ignores_empty_ones() -> None:
    buckets = [bucket(3, 1, latency_ms=300), bucket(1, 1, latency_ms=100), bucket(2, 0, 5)]
    health = health_from_usage("d", buckets, now=240.0)
    # Oldest first: 100, then 300 (minute 2 had no success and no latency sample).
    assert health.ewma_latency_ms == pytest.approx(ALPHA * 300 + (1 - ALPHA) * 100)
    assert health.ewma_tokens_per_s == pytest.approx(50.0)


def test_the_window_is_the_last_ten_minutes() -> None:
    assert window(60 * 100 + 30) == (91, 100)
