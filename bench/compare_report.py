"""The figures of ``make bench-compare``: per target, as ratios to LiteLLM and to the floor.

Input (``results``): ``rounds``, a list of ``{phase: {target: measurement}}``
(one measurement: ``p50``, ``rps``, ``ttft_p50``, ``cpu_ms_per_request`` of the
target's process tree, and for edgeproxy ``store_calls_per_request`` and
``units_per_request`` [read, write]); ``startup_s`` and ``rss_mib`` per target;
``cold_start`` of the Lambda handler. "Added" figures subtract the direct
call of the same round; every figure is the median over rounds.
"""

from __future__ import annotations

import math
import statistics
from typing import Any

from bench import built_jobs, built_stream

DIRECT = "direct"
FLOOR = "floor"
LITELLM = "litellm"
TARGETS = {
    DIRECT: "direct (mock upstream)",
    FLOOR: "floor: Node http pass-through",
    "starlette": "bare Starlette + httpx pass-through",
    LITELLM: "LiteLLM (in-memory)",
    "litellm_redis": "LiteLLM + Redis",
    "edgeproxy": "edgeproxy, embedded store (make run)",
    "edgeproxy_nolog": "edgeproxy, embedded store, request log off",
    "edgeproxy_stub": "edgeproxy, stub store",
}
# (key, title, phase, metric, added, lower_is_better)
FIGURES = (
    ("added_p50_c1", "added latency p50, c=1 (ms)", "chat_c1", "p50", True, True),
    ("p50_c1", "latency p50, c=1 (ms)", "chat_c1", "p50", False, True),
    ("p99_c1", "latency p99, c=1 (ms)", "chat_c1", "p99", False, True),
    ("rps_c32", "throughput, c=32 (req/s)", "chat_c32", "rps", False, False),
    ("ttft_added_c8", "stream TTFT added p50, c=8 (ms)", "stream_c8", "ttft_p50", True, True),
    ("cpu_c1", "CPU per request, process tree, c=1 (ms)", "chat_c1", "cpu", False, True),
    ("cpu_c32", "CPU per request, process tree, c=32 (ms)", "chat_c32", "cpu", False, True),
)


def _value(measured: dict[str, Any], metric: str) -> float:
    if metric == "cpu":
        return float(measured["cpu_ms_per_request"])
    return float(measured[metric])


def figures(results: dict[str, Any]) -> dict[str, dict[str, float]]:
    """``{target: {figure: value}}``, medians over rounds; NaN where not measured."""
    out: dict[str, dict[str, float]] = {}
    targets = [t for t in TARGETS if any(t in r.get("chat_c1", {}) for r in results["rounds"])]
    for target in targets:
        row: dict[str, float] = {}
        for key, _title, phase, metric, added, _lower in FIGURES:
            values = []
            for measured in results["rounds"]:
                entry = measured.get(phase, {})
                if target not in entry or (metric != "cpu" and metric not in entry[target]):
                    continue  # not measured (p99 of an older run's wrk phase)
                value = _value(entry[target], metric)
                if added:
                    value -= _value(entry[DIRECT], metric)
                values.append(value)
            row[key] = statistics.median(values) if values else math.nan
        row["startup_s"] = results.get("startup_s", {}).get(target, math.nan)
        row["rss_mib"] = results.get("rss_mib", {}).get(target, math.nan)
        if target in results.get("gateway_rss_mib", {}):
            row["gateway_rss_mib"] = results["gateway_rss_mib"][target]
        failed = sum(
            r[p][target].get("failed", 0) for r in results["rounds"] for p in r if target in r[p]
        )
        total = sum(
            r[p][target].get("requests", 0) for r in results["rounds"] for p in r if target in r[p]
        )
        if failed:
            row["failed_pct"] = 100 * failed / max(1, total)
        for phase in ("chat_c1", "chat_c32"):
            own = [
                r[phase][target]["gateway_cpu_ms_per_request"]
                for r in results["rounds"]
                if "gateway_cpu_ms_per_request" in r.get(phase, {}).get(target, {})
            ]
            if own:
                row[f"gateway_cpu_{phase.removeprefix('chat_')}"] = statistics.median(own)
            calls = [
                r[phase][target]["store_calls_per_request"]
                for r in results["rounds"]
                if "store_calls_per_request" in r.get(phase, {}).get(target, {})
            ]
            units = [
                r[phase][target]["units_per_request"]
                for r in results["rounds"]
                if "units_per_request" in r.get(phase, {}).get(target, {})
            ]
            suffix = phase.removeprefix("chat_")
            if calls:
                row[f"store_calls_{suffix}"] = statistics.median(calls)
            if units:
                row[f"rcu_{suffix}"] = statistics.median(u[0] for u in units)
                row[f"wcu_{suffix}"] = statistics.median(u[1] for u in units)
        out[target] = row
    return out


def ratio(value: float, base: float) -> float:
    """``value / base``; NaN when either is missing or the base is zero."""
    if math.isnan(value) or math.isnan(base) or base == 0:
        return math.nan
    return value / base


def _f(value: float, digits: int = 1) -> str:
    return "-" if math.isnan(value) else f"{value:.{digits}f}"


def _x(value: float) -> str:
    return "-" if math.isnan(value) else f"{value:.2f}x"


def table(rows: dict[str, dict[str, float]]) -> list[str]:
    """Markdown: every figure per target, with ratios to LiteLLM and to the floor."""
    names = [t for t in TARGETS if t in rows]
    lines = [
        "| figure | " + " | ".join(TARGETS[t] for t in names) + " |",
        "|---|" + "---:|" * len(names),
    ]
    keys = [(key, title) for key, title, *_ in FIGURES]
    keys += [("startup_s", "startup to first answer (s)"), ("rss_mib", "RSS after load (MiB)")]
    for key, title in keys:
        cells = []
        for target in names:
            value = rows[target].get(key, math.nan)
            cell = _f(value, 2 if key == "startup_s" else 1)
            versus = []
            if target not in (DIRECT, LITELLM) and LITELLM in rows and not math.isnan(value):
                versus.append(f"{_x(ratio(value, rows[LITELLM].get(key, math.nan)))} LiteLLM")
            if target not in (DIRECT, FLOOR) and FLOOR in rows and not math.isnan(value):
                versus.append(f"{_x(ratio(value, rows[FLOOR].get(key, math.nan)))} floor")
            if versus:
                cell += f" ({', '.join(versus)})"
            cells.append(cell)
        lines.append(f"| {title} | " + " | ".join(cells) + " |")
    for key, title in (
        ("gateway_cpu_c1", "gateway process alone: CPU per request, c=1 (ms)"),
        ("gateway_cpu_c32", "gateway process alone: CPU per request, c=32 (ms)"),
        ("failed_pct", "requests failed (%, all phases)"),
        ("store_calls_c1", "store calls per request, c=1"),
        ("store_calls_c32", "store calls per request, c=32"),
        ("rcu_c32", "read units per request (est.), c=32"),
        ("wcu_c32", "write units per request (est.), c=32"),
    ):
        if any(key in rows[t] for t in names):
            cells = [_f(rows[t].get(key, math.nan), 2) for t in names]
            lines.append(f"| {title} | " + " | ".join(cells) + " |")
    return lines


def targets(
    rows: dict[str, dict[str, float]], cold_start_s: float, built: dict[str, Any] | None = None
) -> list[dict[str, Any]]:
    """The issue's targets with the measured figure and PASS/MISS (missing: MISS).

    ``built``: ``bench.built``'s summary of the sam-built proxy function, if measured.
    """
    nan = math.nan
    built = built or {}
    lite = rows.get(LITELLM, {})
    floor = rows.get(FLOOR, {})
    stub = rows.get("edgeproxy_stub", {})
    emb = rows.get("edgeproxy", {})
    nolog = rows.get("edgeproxy_nolog", {})

    def get(row: dict[str, float], key: str) -> float:
        return row.get(key, nan)

    def own(row: dict[str, float], key: str) -> float:
        """The gateway process alone where measured (the stub's own CPU is not the gateway's)."""
        return row.get("gateway_" + key, row.get(key, nan))

    checks = [
        ("stub store: gateway CPU/req c=1 vs LiteLLM", ratio(own(stub, "cpu_c1"), get(lite, "cpu_c1")), "<=", 1 / 6),
        ("stub store: gateway CPU/req c=32 vs LiteLLM", ratio(own(stub, "cpu_c32"), get(lite, "cpu_c32")), "<=", 1 / 6),
        ("stub store: gateway CPU/req c=32 vs floor", ratio(own(stub, "cpu_c32"), get(floor, "cpu_c32")), "<=", 2.0),
        ("embedded: added p50 c=1 vs LiteLLM", ratio(get(emb, "added_p50_c1"), get(lite, "added_p50_c1")), "<=", 0.6),
        ("embedded: throughput c=32 vs LiteLLM", ratio(get(emb, "rps_c32"), get(lite, "rps_c32")), ">=", 2.0),
        ("embedded: stream TTFT added c=8 vs LiteLLM", ratio(get(emb, "ttft_added_c8"), get(lite, "ttft_added_c8")), "<=", 0.5),
        ("embedded: store calls per request, c=32", get(emb, "store_calls_c32"), "<=", 0.5),
        ("embedded: throughput c=32 vs request log off", ratio(get(emb, "rps_c32"), get(nolog, "rps_c32")), ">=", 0.9),
        ("embedded: p99 / p50 at c=1", ratio(get(emb, "p99_c1"), get(emb, "p50_c1")), "<=", 2.0),
        ("embedded: added p50 c=1 (ms)", get(emb, "added_p50_c1"), "<=", 3.0),
        ("embedded: CPU/req, process tree, c=1 (ms)", get(emb, "cpu_c1"), "<=", 3.0),
        ("embedded: CPU/req, process tree, c=32 (ms)", get(emb, "cpu_c32"), "<=", 1.3),
        ("embedded: stream TTFT added c=8 (ms)", get(emb, "ttft_added_c8"), "<=", 15.0),
        ("Lambda handler cold start (s)", cold_start_s, "<=", 0.8),
        ("edgeproxy gateway RSS after load (MiB)", get(emb, "gateway_rss_mib"), "<=", 150.0),
        ("built ProxyFunction cold start (s)", built.get("cold_start_s", nan), "<=", 0.5),
        ("built ProxyFunction CPU per warm invocation (ms)", built.get("warm_cpu_s", nan) * 1000, "<=", 3.0),
    ]  # fmt: skip
    out = []
    for name, value, rule, limit in checks:
        ok = not math.isnan(value) and (value <= limit if rule == "<=" else value >= limit)
        out.append({"target": name, "value": value, "rule": rule, "limit": limit, "pass": ok})
    return out


def markdown(results: dict[str, Any], rows: dict[str, dict[str, float]], goals: list[dict[str, Any]]) -> str:  # fmt: skip
    """The whole results page of one comparison run."""
    meta = results["meta"]
    cold = results.get("cold_start", {})
    lines = [
        "# edgeproxy vs LiteLLM: side by side",
        "",
        f"- date: {meta['date']}; {meta['rounds']} alternating rounds, {meta['seconds']} s per "
        "phase and target; everything on loopback, one worker each",
        f"- machine: {meta['cpu']}, {meta['nproc']} CPUs, {meta['kernel']}; Python "
        f"{meta['python']}; LiteLLM {meta['litellm']}; {meta['redis']}; load: {meta['tool']}",
        "- cells: the figure, then (its ratio to LiteLLM in-memory, to the bare pass-through "
        "floor); CPU is the target's whole process tree (edgeproxy: gateway + store; "
        "LiteLLM + Redis: proxy + redis-server), the mock upstream excluded",
        "",
        *table(rows),
        "",
        f"Lambda handler cold start (fresh interpreter, import + init + first event): "
        f"{_f(cold.get('cold_start_s', math.nan), 3)} s; edgeproxy gateway process RSS after "
        f"load: {_f(rows.get('edgeproxy', {}).get('gateway_rss_mib', math.nan))} MiB.",
        "",
        *built_lines(results.get("built")),
        "## Targets",
        "",
        "| target | measured | rule | result |",
        "|---|---:|---|---|",
        *[
            f"| {g['target']} | {_f(g['value'], 2)} | {g['rule']} {g['limit']:.2f} | "
            f"{'PASS' if g['pass'] else 'MISS'} |"
            for g in goals
        ],
    ]
    return "\n".join(lines) + "\n"


def built_lines(built: dict[str, Any] | None) -> list[str]:
    """The sam-built proxy function's section (``bench.built``): cold start, warm CPU, sizes."""
    if not built:
        return []
    return [
        "## The sam-built ProxyFunction (fresh `python3.12 -I -S -B`, stub store)",
        "",
        f"- cold start (spawn to first answer): {_f(built['cold_start_s'], 3)} s median of "
        f"{built['repeats']} (range {_f(built['cold_start_range_s'][0], 3)}-"
        f"{_f(built['cold_start_range_s'][1], 3)}); import {_f(built['import_init_s'], 3)} s, "
        f"first event {_f(built['first_event_s'], 3)} s; {built['modules']} modules",
        f"- CPU: import {_f(built['import_cpu_s'] * 1000)} ms, first event "
        f"{_f(built['first_event_cpu_s'] * 1000)} ms, warm invocation "
        f"{_f(built['warm_cpu_s'] * 1000, 2)} ms (wall {_f(built['warm_wall_s'] * 1000, 2)} ms); "
        f"RSS after the events {_f(built['rss_after_events_mib'])} MiB",
        "",
        "| memory (MB) | CPU share | cold CPU-bound (s) | warm CPU-bound (ms) |",
        "|---:|---:|---:|---:|",
        *[
            f"| {size} | {row['share']:.3f} | {_f(row['cold_cpu_s'], 2)} | "
            f"{_f(row['warm_cpu_ms'], 1)} |"
            for size, row in built["shares"].items()
        ],
        "",
        "Modelled: measured CPU / share (Lambda: 1769 MB = 1 vCPU); waiting on the store "
        "and the upstream does not shrink with memory.",
        "",
        *built_stream.lines(built.get("stream")),
        *built_jobs.lines(built.get("jobs")),
    ]
