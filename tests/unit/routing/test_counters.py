"""The status page's per-minute counters: failure classes, latency buckets, the median."""

from __future__ import annotations

import pytest

from edgeproxy.routing import counters
from edgeproxy.routing.faults import FailureClass
from edgeproxy.routing.snapshot import Usage


@pytest.mark.parametrize(
    ("ms", "field"),
    [
        (0, "latency_le_100"),
        (100, "latency_le_100"),
        (101, "latency_le_250"),
        (999.5, "latency_le_1000"),
        (30_000, "latency_le_30000"),
        (30_001, "latency_over_30000"),
    ],
)
def test_a_success_adds_one_to_the_bucket_its_latency_falls_in(ms: float, field: str) -> None:
    assert counters.latency_counter(ms) == {field: 1}


def test_every_bucket_and_class_counter_is_a_usage_counter() -> None:
    names = set(Usage.__dataclass_fields__)
    assert set(counters.LATENCY_FIELDS) <= names
    assert set(counters.FAILURE_COUNTERS.values()) <= names


def test_failures_count_by_class_and_neutral_ones_not_at_all() -> None:
    assert counters.failure_counter(FailureClass.TRANSIENT) == {"transient_failures": 1}
    assert counters.failure_counter(FailureClass.CONFIGURATION) == {"configuration_failures": 1}
    assert counters.failure_counter(FailureClass.THROTTLE) == {"throttles": 1}
    assert counters.failure_counter(FailureClass.REQUEST) == {"request_errors": 1}
    assert counters.failure_counter(FailureClass.GATEWAY) == {}
    assert counters.failure_counter(FailureClass.INCOMPATIBLE) == {}


def test_counted_adds_to_the_increments() -> None:
    delta = Usage("d", 3, successes=1).counted({"latency_le_250": 1})
    assert (delta.successes, delta.latency_le_250) == (1, 1)
    assert delta.counted({"latency_le_250": 2}).latency_le_250 == 3


def test_the_median_is_interpolated_inside_its_bucket() -> None:
    assert counters.median_ms(Usage("d", 0)) is None
    assert counters.median_ms(Usage("d", 0, latency_le_100=2)) == 50.0
    # 4 successes: the 2nd is the last of the first two buckets.
    assert (
        counters.median_ms(Usage("d", 0, latency_le_100=1, latency_le_250=1, latency_le_500=2))
        == 250.0
    )
    assert counters.median_ms(Usage("d", 0, latency_le_1000=1, latency_over_30000=3)) == 30_000.0


@pytest.mark.parametrize(
    ("anomalies", "added"),
    [
        ((), {}),
        (("missing_done",), {}),
        (("missing_finish_reason",), {"unfinished_streams": 1}),
        (("missing_finish_reason", "empty", "malformed_event"), {"unfinished_streams": 1}),
    ],
)
def test_a_stream_that_stated_no_finish_reason_counts_once_as_unfinished(
    anomalies: tuple[str, ...], added: dict[str, int]
) -> None:
    assert counters.anomaly_counter(anomalies) == added
    assert set(added) <= set(Usage.__dataclass_fields__)
