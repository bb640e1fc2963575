"""Health scores from usage buckets: neutral without data, per-request EWMAs replayed from minute sums."""

from __future__ import annotations

import pytest

from edgeproxy.routing.health import (
    ALPHA,
    HEALTH_MAX_AGE_SECONDS,
    health_from_usage,
    usable,
    window,
    with_usable_health,
)
from edgeproxy.routing.snapshot import Health, PoolSnapshot, Second, Usage


def bucket(
    minute: int, successes: int, failures: int = 0, latency_ms: int = 0, rated: int | None = None
) -> Usage:
    rated = successes if rated is None else rated
    return Usage(
        "d",
        minute,
        successes=successes,
        failures=failures,
        latency_ms_sum=latency_ms * successes,
        output_tokens_per_s_sum=50.0 * rated,
        throughput_samples=rated,
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
    assert health.samples == 7


def test_one_outlier_then_99_fast_answers_reads_fast() -> None:
    # The per-request EWMA (alpha 0.2) forgets one 1000 ms outlier after 99 answers of 100 ms.
    health = health_from_usage(
        "d", [bucket(1, 1, latency_ms=1000), bucket(2, 99, latency_ms=100)], now=180.0
    )
    assert health.ewma_latency_ms == pytest.approx(100.0, rel=0.10)
    # The old per-minute-mean EWMA read 820 ms here.
    assert health.ewma_latency_ms < 110


def test_a_minute_of_n_answers_moves_the_average_as_n_requests_would() -> None:
    health = health_from_usage(
        "d", [bucket(1, 1, latency_ms=200), bucket(2, 3, latency_ms=100)], now=180.0
    )
    per_request = 200.0
    for _ in range(3):
        per_request = ALPHA * 100 + (1 - ALPHA) * per_request
    assert health.ewma_latency_ms == pytest.approx(per_request)


def test_throughput_counts_only_answers_that_reported_tokens() -> None:
    # Ten successes, one with tokens at 50 tokens/s: throughput is 50, not 5.
    health = health_from_usage("d", [bucket(1, 10, latency_ms=100, rated=1)], now=120.0)
    assert health.ewma_tokens_per_s == pytest.approx(50.0)


def test_no_traffic_is_no_data_and_old_health_is_ignored() -> None:
    now = 10_000.0
    idle = health_from_usage("d", [], now=now)
    assert idle.samples == 0
    assert not usable(idle, now)
    fresh = Health("d", score=0.9, updated_at=now - 10, samples=5)
    stale = Health("d", score=0.9, updated_at=now - HEALTH_MAX_AGE_SECONDS - 1, samples=5)
    assert usable(fresh, now)
    assert not usable(stale, now)
    snapshot = PoolSnapshot(health={"a": fresh, "b": stale, "c": idle})
    assert set(with_usable_health(snapshot, now).health) == {"a"}


def test_the_window_is_the_last_ten_minutes() -> None:
    assert window(60 * 100 + 30) == (91, 100)


def by_second(minute: int, answers: dict[int, tuple[int, int]]) -> Usage:
    """A bucket whose answers finished in the given seconds: second -> (count, latency ms)."""
    return Usage(
        "d",
        minute,
        successes=sum(n for n, _ in answers.values()),
        seconds={s: Second(n, n * ms, n, 50.0 * n) for s, (n, ms) in answers.items()},
    )


def test_the_ewma_replays_answers_in_the_order_they_finished() -> None:
    # 99 answers of 100 ms over the first 40 seconds, then one of 1000 ms.
    fast = {s: (3, 100) for s in range(33)}
    health = health_from_usage("d", [by_second(5, {**fast, 45: (1, 1000)})], now=360.0)
    assert health.ewma_latency_ms == pytest.approx(0.8 * 100 + 0.2 * 1000)  # 280, 000's formula
    # The same answers as one minute's mean read 109 ms.
    mean = health_from_usage("d", [bucket(5, 100, latency_ms=109)], now=360.0)
    assert mean.ewma_latency_ms == pytest.approx(109.0)


def test_seconds_are_ordered_across_buckets_and_within_one() -> None:
    older = by_second(4, {59: (1, 500)})
    newer = by_second(5, {30: (1, 100), 2: (1, 300)})
    health = health_from_usage("d", [newer, older], now=360.0)
    expected = 500.0
    for ms in (300, 100):
        expected = ALPHA * ms + (1 - ALPHA) * expected
    assert health.ewma_latency_ms == pytest.approx(expected)
    assert health.ewma_tokens_per_s == pytest.approx(50.0)


def test_buckets_without_per_second_sums_replay_per_minute() -> None:
    # What an older release wrote: minute sums only, replayed as before.
    health = health_from_usage("d", [bucket(1, 2, latency_ms=100)], now=120.0)
    assert health.ewma_latency_ms == pytest.approx(100.0)
