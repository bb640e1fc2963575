"""A deployment's ratio of reported to estimated prompt tokens (``routing.calibration``)."""

from __future__ import annotations

from edgeproxy.routing.estimates.calibration import (
    MAX_RATIO,
    Calibration,
    highest,
    observed,
    scaled,
)


def test_a_short_estimate_is_corrected_at_once_and_a_long_one_slowly() -> None:
    cal = observed(Calibration(), estimated=100, reported=150)
    assert cal == Calibration(1.5, 1)
    lower = observed(cal, estimated=100, reported=100)
    assert 1.0 < lower.ratio < 1.5  # smoothed down, never below what the last samples said
    assert observed(lower, estimated=100, reported=200).ratio == 2.0


def test_the_first_count_sets_the_ratio_even_below_one() -> None:
    # A raw completion prompt the bound (text, plus a chat reply's frame) puts at 6 and
    # the server counted at 3: from its first answer on it is counted at half.
    first = observed(Calibration(), estimated=6, reported=3)
    assert first == Calibration(0.5, 1)
    assert scaled(6, first.ratio) == 6  # a reservation still never goes below the bound
    assert observed(first, estimated=6, reported=6).ratio == 1.0  # later: up at once
    assert 0.5 < observed(Calibration(0.9, 2), estimated=6, reported=3).ratio < 0.9  # down slowly


def test_answers_without_a_count_teach_nothing() -> None:
    cal = Calibration(1.5, 3)
    assert observed(cal, estimated=100, reported=0) == cal
    assert observed(cal, estimated=0, reported=10) == cal


def test_the_ratio_used_stays_between_one_and_its_ceiling() -> None:
    assert scaled(100, 0.5) == 100  # never below the conservative estimate
    assert scaled(100, 1.01) == 101
    assert scaled(100, 50.0) == 100 * MAX_RATIO
    assert observed(Calibration(), estimated=1, reported=10_000).ratio == MAX_RATIO


def test_a_pool_reserves_at_its_highest_ratio() -> None:
    assert highest([Calibration(1.2), Calibration(1.7), Calibration()]) == 1.7
    assert highest([]) == 1.0
