"""Item conversion keeps every field of the core's value types."""

from __future__ import annotations

import dataclasses

import pytest

from edgeproxy.routing.snapshot import Circuit, CircuitState, Health, OpenCause, Second, Usage
from edgeproxy.state import items
from edgeproxy.state.store import UsageDelta

FULL_CIRCUIT = Circuit(
    deployment_id="d1",
    state=CircuitState.HALF_OPEN,
    failures=3,
    window_start=1_700_000_000.25,
    open_until=1_700_000_060.5,
    level=2,
    probe_owner="req-1",
    probe_until=1_700_000_061.0,
    cause=OpenCause.CONFIGURATION,
    version=7,
    opened_at=1_700_000_000.5,
    reason="node swap",
)


def test_circuit_item_has_every_field() -> None:
    fields = {f.name for f in dataclasses.fields(Circuit)} - {"deployment_id"}
    assert set(items.circuit_item(FULL_CIRCUIT)) == fields


def test_circuit_round_trips() -> None:
    assert items.circuit_from("d1", items.circuit_item(FULL_CIRCUIT)) == FULL_CIRCUIT
    bare = Circuit("d1", version=1)
    assert items.circuit_from("d1", items.circuit_item(bare)) == bare


def test_usage_counters_keep_their_stored_attribute_names() -> None:
    # Renaming a Usage field renames a DynamoDB attribute: stored buckets would read as 0.
    assert items.USAGE_COUNTERS == (
        "requests",
        "inflight",
        "prompt_tokens",
        "completion_tokens",
        "successes",
        "failures",
        "latency_ms_sum",
        "output_tokens_per_s_sum",
        "throughput_samples",
        "sticky_hits",
        "reserved_tokens",
        "transient_failures",
        "configuration_failures",
        "throttles",
        "request_errors",
        "unfinished_streams",
        "latency_le_100",
        "latency_le_250",
        "latency_le_500",
        "latency_le_1000",
        "latency_le_2500",
        "latency_le_5000",
        "latency_le_10000",
        "latency_le_30000",
        "latency_over_30000",
        "prefill_tokens",
        "prefill_elephants",
    )


def test_every_usage_counter_round_trips() -> None:
    full = Usage("d1", 7, **{name: i + 1 for i, name in enumerate(items.USAGE_COUNTERS)})
    full = dataclasses.replace(full, output_tokens_per_s_sum=41.5)
    added = items.usage_counters(full)
    assert set(added) == set(items.USAGE_COUNTERS)
    item = {name: items.number(value) for name, value in added.items()}
    assert items.usage_from("d1", 7, item) == full


def test_a_delta_adds_only_its_non_zero_counters() -> None:
    delta = UsageDelta("d1", 7, inflight=-1, successes=1)
    assert items.usage_counters(delta) == {"inflight": -1, "successes": 1}
    assert items.usage_from("d1", 7, {}) == Usage("d1", 7)


def test_health_round_trips_with_and_without_ewmas() -> None:
    full = Health("d1", score=0.9, ewma_latency_ms=120.5, ewma_tokens_per_s=42.0, updated_at=5.0)
    empty = Health("d1", score=0.1, updated_at=5.0)
    assert items.health_from("d1", items.health_item(full)) == full
    assert items.health_from("d1", items.health_item(empty)) == empty


@pytest.mark.parametrize("value", [float("nan"), float("inf")])
def test_non_finite_numbers_are_refused(value: float) -> None:
    with pytest.raises(ValueError, match="cannot store"):
        items.number(value)


def test_small_and_large_floats_survive() -> None:
    for value in (1e-05, 0.1, 1_700_000_000.123456, 123456789012.5):
        assert items.get_float({"x": items.number(value)}, "x") == value


def test_per_second_sums_round_trip_under_short_attribute_names() -> None:
    delta = Usage(
        "d", 7, successes=2, seconds={3: Second(2, 250, 1, 40.5), 59: Second(0, 0, 1, 9.0)}
    )
    counters = items.usage_counters(delta)
    assert counters == {
        "successes": 2,
        "s03n": 2,
        "s03l": 250,
        "s03r": 1,
        "s03t": 40.5,
        "s59r": 1,
        "s59t": 9.0,
    }
    stored = {name: {"N": str(value)} for name, value in counters.items()}
    assert items.usage_from("d", 7, stored) == delta
