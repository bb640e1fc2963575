"""The benchmark's own arithmetic: call classification, percentiles, wrk scripts, targets."""

from __future__ import annotations

from typing import Any

from bench.accounting import classify, per_request
from bench.client import Sample
from bench.harness import _pct
from bench.report import targets
from bench.workloads import Call
from bench.wrk import lua_script


def test_calls_are_charged_to_the_request_window_they_arrive_in() -> None:
    samples = [Sample(sent=1.0, first=None, done=None, end=1.02), Sample(2.0, None, None, 2.02)]
    calls = [
        ["GetItem", 0.5, 0.51],  # before any request: not ours
        ["BatchGetItem", 1.001, 1.004],
        ["UpdateItem", 1.006, 1.009],
        ["UpdateItem", 1.0199, 1.025],  # arrived just before the end, answered after it
        ["BatchGetItem", 2.001, 2.004],
        ["UpdateItem", 2.006, 2.009],
        ["UpdateItem", 2.03, 2.04],
    ]
    out = classify(samples, calls)
    assert out["before_end"] == {"BatchGetItem": 1.0, "UpdateItem": 1.0}
    assert out["after_end"] == {"UpdateItem": 1.0}
    assert out["critical_per_request"] == 2.0
    assert out["after_per_request"] == 1.0
    assert abs(out["closest_after_ms"] - 5.0) < 1e-6
    assert abs(out["closest_critical_ms"] - (-11.0)) < 1e-6


def test_stream_calls_before_the_first_token_are_told_apart() -> None:
    samples = [Sample(sent=1.0, first=1.01, done=1.02, end=1.03)]
    calls = [["BatchGetItem", 1.001, 1.002], ["UpdateItem", 1.009, 1.012]]
    out = classify(samples, calls)
    assert out["before_first_token"] == {"BatchGetItem": 1.0}
    assert out["before_end"] == {"UpdateItem": 1.0}
    assert out["critical_per_request"] == 2.0


def test_per_request_counts_every_operation() -> None:
    calls = [["BatchGetItem", 0, 0], ["UpdateItem", 0, 0], ["UpdateItem", 0, 0], ["GetItem", 0, 0]]
    assert per_request(calls, 2) == {
        "BatchGetItem": 0.5,
        "GetItem": 0.5,
        "UpdateItem": 1.0,
        "total": 2.0,
    }


def test_nearest_rank_percentile() -> None:
    values = [float(v) for v in range(1, 101)]
    assert _pct(values, 50) == 50.0
    assert _pct(values, 99) == 99.0
    assert _pct([7.0], 90) == 7.0


def test_lua_script_escapes_the_body() -> None:
    call = Call("/v1/x", '{"a": "say \\"hi\\""}', "sk-1")
    script = lua_script(call)
    assert 'wrk.body = "{\\"a\\": \\"say \\\\\\"hi\\\\\\"\\"}"' in script
    assert 'wrk.headers["Authorization"] = "Bearer sk-1"' in script
    assert "function done(summary, latency, requests)" in script


def _results(added_p50: float, rtt: float) -> tuple[dict[str, Any], dict[str, Any]]:
    summary = {
        "store_rtt_ms": {"BatchGetItem": rtt},
        "chat_c1": {"p50": {"added": added_p50}},
        "chat_c32": {
            "cpu_ms_per_request": {"gateway": {"gateway": 1.0}},
            "store_calls_per_request": {"gateway": {"total": 0.5}},
        },
        "stream_c1": {"ttft_p50": {"added": 4.0}},
        "stream_c8": {"ttft_p50": {"added": 6.0}},
    }
    results = {
        "critical_path": {"chat": {"critical_per_request": 2.0}},
        "cold_start": {"cold_start_s": 0.5, "warm_store_calls": {"BatchGetItem": 1.0}},
        "memory_mib": {"gateway": {"VmRSS": 100.0}},
    }
    return results, summary


def test_targets_pass_at_the_limit_and_miss_past_it() -> None:
    results, summary = _results(added_p50=16.0, rtt=10.0)  # limit 1.5 * 10 + 1 = 16
    verdicts = {t["target"]: t["pass"] for t in targets(results, summary)}
    assert verdicts["added p50 latency, chat c=1 (ms)"] is True
    assert verdicts["DynamoDB calls on the critical path (chat)"] is True
    assert verdicts["streaming: added time to first token, p50, c=8 (ms)"] is False
    assert verdicts["streaming: added time to first token, p50, c=1 (ms, no store queueing)"]
    assert verdicts["DynamoDB calls per request, chat c=32 (long-lived process)"] is True
    assert verdicts["state reads per warm Lambda event (Mangum: one request at a time)"] is True
    results, summary = _results(added_p50=16.5, rtt=10.0)
    verdicts = {t["target"]: t["pass"] for t in targets(results, summary)}
    assert verdicts["added p50 latency, chat c=1 (ms)"] is False
