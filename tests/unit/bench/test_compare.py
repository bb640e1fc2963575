"""``make bench-compare``'s arithmetic: added figures, medians, ratios, targets, units."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from bench.built import shares
from bench.compare_report import figures, markdown, ratio, table, targets
from bench.contenders import litellm_config
from bench.store_server import units


def _m(p50: float, rps: float, ttft: float, cpu: float, **extra: Any) -> dict[str, Any]:
    return {"p50": p50, "rps": rps, "ttft_p50": ttft, "cpu_ms_per_request": cpu, **extra}


def _round(lite_p50: float, edge_p50: float) -> dict[str, Any]:
    store = {
        "store_calls_per_request": 3.0,
        "units_per_request": [6.0, 2.0],
        "gateway_cpu_ms_per_request": 3.0,
    }
    row = {
        "direct": _m(1.0, 1000, 10.0, 0.5),
        "floor": _m(3.0, 400, 12.0, 2.0),
        "litellm": _m(lite_p50, 60, 200.0, 20.0),
        "edgeproxy": _m(edge_p50, 130, 90.0, 4.0, **store),
    }
    return {"chat_c1": row, "chat_c32": row, "stream_c8": row}


RESULTS: dict[str, Any] = {
    "rounds": [_round(21.0, 9.0), _round(19.0, 13.0), _round(25.0, 11.0)],
    "startup_s": {"litellm": 10.0, "edgeproxy": 2.0, "floor": 0.5},
    "rss_mib": {"litellm": 400.0, "edgeproxy": 140.0, "floor": 50.0},
    "gateway_rss_mib": {"edgeproxy": 100.0},
    "meta": {
        **{"date": "2026-12-01 12:00 UTC", "rounds": 3, "seconds": 5, "nproc": 2, "cpu": "x"},
        **{"kernel": "k", "python": "3.11", "litellm": "1.108.7", "redis": "Redis 7"},
        "tool": "wrk",
    },
    "cold_start": {"cold_start_s": 0.7},
}


def test_added_figures_subtract_the_direct_call_of_the_same_round_then_take_the_median() -> None:
    rows = figures(RESULTS)
    assert rows["litellm"]["added_p50_c1"] == 20.0  # median of 20, 18, 24
    assert rows["edgeproxy"]["added_p50_c1"] == 10.0  # median of 8, 12, 10
    assert rows["edgeproxy"]["ttft_added_c8"] == 80.0
    assert rows["edgeproxy"]["rps_c32"] == 130  # rates are not "added"
    assert rows["edgeproxy"]["store_calls_c32"] == 3.0
    assert (rows["edgeproxy"]["rcu_c32"], rows["edgeproxy"]["wcu_c32"]) == (6.0, 2.0)
    assert rows["edgeproxy"]["gateway_rss_mib"] == 100.0
    assert rows["edgeproxy"]["gateway_cpu_c32"] == 3.0
    assert "store_calls_c32" not in rows["litellm"]


def test_ratios_and_targets() -> None:
    rows = figures(RESULTS)
    assert ratio(10.0, 20.0) == 0.5
    assert math.isnan(ratio(1.0, 0.0))
    assert math.isnan(ratio(math.nan, 1.0))
    goals = {g["target"]: g for g in targets(rows, 0.7)}
    assert goals["embedded: added p50 c=1 vs LiteLLM"]["pass"]  # 0.5 <= 0.6
    assert goals["embedded: throughput c=32 vs LiteLLM"]["pass"]  # 130/60 >= 2
    assert not goals["embedded: store calls per request, c=32"]["pass"]  # 3 > 0.5
    assert not goals["stub store: gateway CPU/req c=1 vs LiteLLM"]["pass"]  # not measured: a miss
    assert goals["Lambda handler cold start (s)"]["pass"]


def test_the_table_states_each_figure_with_its_ratios() -> None:
    lines = table(figures(RESULTS))
    added = next(line for line in lines if line.startswith("| added latency"))
    assert "10.0 (0.50x LiteLLM, 5.00x floor)" in added
    assert "2.0 (0.10x LiteLLM)" in added  # the floor: no ratio to itself
    assert "MISS" in markdown(RESULTS, figures(RESULTS), targets(figures(RESULTS), 0.7))


def test_read_and_write_units_follow_dynamodb_pricing() -> None:
    item = {"pk": {"S": "x"}}
    asked = json.dumps({"RequestItems": {"t": {"Keys": [item] * 3, "ConsistentRead": True}}})
    answer = json.dumps({"Responses": {"t": [item] * 3}})
    assert units("BatchGetItem", asked.encode(), answer.encode()) == (3.0, 0.0)
    eventual = asked.replace("true", "false").encode()
    assert units("BatchGetItem", eventual, answer.encode()) == (1.5, 0.0)
    assert units("UpdateItem", b'{"Key": {}}', b"{}") == (0.0, 1.0)
    transact = json.dumps({"TransactItems": [{"Put": {}}, {"Update": {}}]}).encode()
    assert units("TransactWriteItems", transact, b"{}") == (0.0, 4.0)


def test_litellm_config_points_at_the_loopback_mock_and_redis_only_when_asked() -> None:
    plain = litellm_config(4000, None)
    assert "api_base: http://127.0.0.1:4000/v1" in plain
    assert "redis" not in plain
    assert "redis_port: 6390" in litellm_config(4000, 6390)


BUILT: dict[str, Any] = {
    **{"cold_start_s": 0.45, "cold_start_range_s": [0.42, 0.61], "import_init_s": 0.3},
    **{"first_event_s": 0.1, "modules": 680, "import_cpu_s": 0.28, "first_event_cpu_s": 0.06},
    **{"warm_cpu_s": 0.0035, "warm_wall_s": 0.006, "rss_after_events_mib": 56.0, "repeats": 7},
    "shares": shares(0.34, 0.0035),
}


def test_the_built_function_has_its_rows_and_targets() -> None:
    goals = {g["target"]: g for g in targets(figures(RESULTS), 0.7, BUILT)}
    assert goals["built ProxyFunction cold start (s)"]["pass"]  # 0.45 <= 0.5
    assert not goals["built ProxyFunction CPU per warm invocation (ms)"]["pass"]  # 3.5 > 3
    page = markdown({**RESULTS, "built": BUILT}, figures(RESULTS), list(goals.values()))
    assert "0.450 s median of 7 (range 0.420-0.610)" in page
    assert "| 512 | 0.289 | 1.17 | 12.1 |" in page  # 0.34 s / (512/1769); 3.5 ms / 0.289
    no_built = {g["target"]: g for g in targets(figures(RESULTS), 0.7)}
    assert not no_built["built ProxyFunction cold start (s)"]["pass"]  # not measured: a miss


def test_cpu_shares_are_in_proportion_to_memory_up_to_one_vcpu() -> None:
    modelled = shares(1.0, 0.001)
    assert modelled["1024"]["share"] == round(1024 / 1769, 3)
    assert modelled["256"]["cold_cpu_s"] == pytest.approx(1769 / 256)
    assert shares(1.0, 0.001).keys() == {"256", "512", "1024"}


def test_the_log_and_tail_targets_compare_within_the_same_run() -> None:
    on = {**_m(6.0, 900, 12.0, 1.2), "p99": 11.0}
    off = {**_m(5.0, 1000, 11.0, 1.0), "p99": 9.0}
    row = {"direct": {**_m(1.0, 5000, 2.0, 0.0), "p99": 1.5}, "edgeproxy": on}
    row["edgeproxy_nolog"] = off
    rows = figures({"rounds": [{"chat_c1": row, "chat_c32": row, "stream_c8": row}]})
    goals = {g["target"]: g for g in targets(rows, 0.5)}
    log = goals["embedded: throughput c=32 vs request log off"]
    assert (log["value"], log["pass"]) == (0.9, True)
    tail = goals["embedded: p99 / p50 at c=1"]
    assert tail["value"] == pytest.approx(11.0 / 6.0)
    assert tail["pass"] is True
    assert goals["embedded: added p50 c=1 (ms)"]["value"] == 5.0
    assert goals["embedded: added p50 c=1 (ms)"]["pass"] is False
