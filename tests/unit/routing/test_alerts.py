"""Budget alert rules (pure): which thresholds a settlement crosses, when a delivery is retried."""

from __future__ import annotations

from edgeproxy.routing.alerts import MAX_ATTEMPTS, crossed, retry_at


def test_crossing_counts_each_threshold_once_on_the_settlement_that_reaches_it() -> None:
    assert crossed(7.9, 8.0, 10.0, 0.8) == (0.8,)
    assert crossed(8.0, 8.1, 10.0, 0.8) == ()
    assert crossed(7.0, 12.0, 10.0, 0.8) == (0.8, 1.0)
    assert crossed(0.0, 5.0, None, 0.8) == ()
    assert crossed(5.0, 4.0, 10.0, 0.8) == ()  # a release of an estimate never alerts


def test_retries_back_off_and_give_up() -> None:
    assert retry_at(1, 0.0) == 30.0
    assert retry_at(2, 0.0) == 60.0
    assert retry_at(30, 0.0) is None
    assert retry_at(MAX_ATTEMPTS - 1, 0.0) == 3600.0
