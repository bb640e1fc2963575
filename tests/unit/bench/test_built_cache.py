"""``bench.built_cache``'s arithmetic: the warm window's store calls and the per-case summary."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest
from bench.built_cache import summary, warm_ops


def _run(cpu_s: float, ops: dict[str, int], cache: dict[str, int]) -> dict[str, Any]:
    return {"warm_cpu_s": cpu_s, "warm_wall_s": cpu_s * 2, "warm_ops": Counter(ops), "cache": cache}


def test_only_the_calls_that_arrived_during_the_warm_events_are_counted() -> None:
    calls = [
        ["BatchGetItem", 1.0, 1.1],  # the first event's (cold) reads
        ["Query", 2.0, 2.1],
        ["PutItem", 2.5, 2.6],
        ["UpdateItem", 3.0, 3.2],  # the last warm event's end
        ["PutItem", 3.5, 3.6],  # after the warm events: not theirs
    ]
    found = warm_ops(calls, {"warm_started": 2.0, "warm_done": 3.0})
    assert dict(found) == {"Query": 1, "PutItem": 1, "UpdateItem": 1}


def test_the_summary_is_per_warm_event_over_every_process() -> None:
    runs = [
        _run(0.001, {"Query": 10, "PutItem": 10}, {"hit": 10}),
        _run(0.003, {"Query": 10, "PutItem": 12}, {"hit": 9, "miss": 1}),
        _run(0.002, {"Query": 10, "PutItem": 8}, {"hit": 10}),
    ]
    out = summary(runs, 10)
    assert out["warm_events"] == 30
    assert out["warm_cpu_ms"] == pytest.approx(2.0)  # the median process
    assert out["store_calls_per_event"] == pytest.approx(2.0)
    assert out["ops_per_event"] == {"PutItem": 1.0, "Query": 1.0}
    assert out["x_edgeproxy_cache"] == {"hit": 29, "miss": 1}
    # 2 ms of CPU at 512 MB's share of a vCPU (512 / 1769).
    assert out["warm_cpu_ms_at"]["512"] == pytest.approx(2.0 * 1769 / 512, abs=1e-3)
