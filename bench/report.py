"""Summaries, targets and the Markdown/JSON results of one benchmark run.

Every latency figure is the median over rounds of that round's percentile;
"added" and "ratio" are computed per round (gateway against direct in the
same round) and then the median is taken, so slow drift of a shared machine
cancels out.
"""

from __future__ import annotations

import statistics
from typing import Any

METRICS = ("p50", "p90", "p99", "rps", "ttft_p50", "ttft_p90")
TITLES = {
    "chat_c1": "chat, non-stream, c=1",
    "chat_c32": "chat, non-stream, c=32",
    "stream_c1": "chat, stream, c=1",
    "stream_c8": "chat, stream, c=8",
    "stream_c8_wrk": "chat, stream, c=8 (end of stream)",
    "embed_c1": "embeddings, c=1",
}


def summarize(results: dict[str, Any]) -> dict[str, Any]:
    """Per phase and metric: direct, gateway, added and ratio (medians over rounds)."""
    out: dict[str, Any] = {}
    for name, phase in results["phases"].items():
        rows: dict[str, Any] = {}
        for metric in METRICS:
            pairs = [
                (r["direct"][metric], r["gateway"][metric])
                for r in phase["rounds"]
                if metric in r["direct"]
            ]
            if not pairs:
                continue
            rows[metric] = {
                "direct": statistics.median(d for d, _ in pairs),
                "gateway": statistics.median(g for _, g in pairs),
                "added": statistics.median(g - d for d, g in pairs),
                "ratio": statistics.median(g / d for d, g in pairs if d),
            }
        for key in ("cpu_ms_per_request", "store_calls_per_request", "capacity_units_per_request"):
            per_side = {}
            for side in ("direct", "gateway"):
                names = phase["rounds"][0][side].get(key, {})
                per_side[side] = {
                    n: statistics.median(r[side].get(key, {}).get(n, 0.0) for r in phase["rounds"])
                    for n in names
                }
            rows[key] = per_side
        out[name] = {"tool": phase["tool"], "connections": phase["connections"], **rows}
    rtts = results["store_rtt_rounds"]
    out["store_rtt_ms"] = (
        {op: statistics.median(r[op] for r in rtts if op in r) for op in rtts[0]} if rtts else {}
    )
    return out


def targets(results: dict[str, Any], summary: dict[str, Any]) -> list[dict[str, Any]]:
    """The issue's targets, each with the measured figure, the limit and PASS/MISS."""
    rtt = summary["store_rtt_ms"].get("BatchGetItem", float("nan"))
    chat_added = summary["chat_c1"]["p50"]["added"]
    critical = results["critical_path"]["chat"]["critical_per_request"]
    cpu = summary["chat_c32"]["cpu_ms_per_request"]["gateway"]["gateway"]
    ttft = summary["stream_c8"]["ttft_p50"]["added"]
    cold = results["cold_start"]["cold_start_s"]
    rss = results["memory_mib"]["gateway"]["VmRSS"]
    rows = [
        (
            "added p50 latency, chat c=1 (ms)",
            chat_added,
            1.5 * rtt + 1,
            "<= 1.5 x store RTT + 1 ms",
        ),
        ("DynamoDB calls on the critical path (chat)", critical, 2, "<= 2"),
        ("gateway CPU per request, chat c=32 (ms)", cpu, 2, "< 2 ms"),
        ("streaming: added time to first token, p50, c=8 (ms)", ttft, 5, "< 5 ms"),
        (
            "streaming: added time to first token, p50, c=1 (ms, no store queueing)",
            summary["stream_c1"]["ttft_p50"]["added"],
            5,
            "< 5 ms",
        ),
        (
            "DynamoDB calls per request, chat c=32 (long-lived process)",
            summary["chat_c32"]["store_calls_per_request"]["gateway"].get("total", 0.0),
            0.5,
            "<= 0.5",
        ),
        (
            "state reads per warm Lambda event (Mangum: one request at a time)",
            results["cold_start"]["warm_store_calls"].get("BatchGetItem", 0.0),
            1,
            "<= 1",
        ),
        ("cold start: import + init + first event (s)", cold, 1, "< 1 s"),
        ("gateway RSS after load (MiB)", rss, 120, "< 120 MiB"),
    ]
    out = []
    for name, value, limit, rule in rows:
        inclusive = rule.startswith("<=")
        ok = value <= limit if inclusive else value < limit
        out.append({"target": name, "value": value, "limit": limit, "rule": rule, "pass": ok})
    return out


def _f(value: Any, digits: int = 2) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


def comparison_table(summary: dict[str, Any]) -> list[str]:
    """Direct vs gateway, per workload and metric."""
    lines = [
        "| workload | metric | direct | edgeproxy | added | ratio | tool |",
        "|---|---|---:|---:|---:|---:|---|",
    ]
    for name, title in TITLES.items():
        phase = summary.get(name)
        if phase is None:
            continue
        for metric in METRICS:
            if metric not in phase:
                continue
            row = phase[metric]
            unit = "req/s" if metric == "rps" else "ms"
            lines.append(
                f"| {title} | {metric} ({unit}) | {_f(row['direct'])} | {_f(row['gateway'])} "
                f"| {_f(row['added'])} | {_f(row['ratio'])}x | {phase['tool']} |"
            )
    return lines


def resources_table(summary: dict[str, Any]) -> list[str]:
    """CPU, store calls and DynamoDB capacity units (``bench.units``) per request, per workload."""
    lines = [
        "| workload | gateway CPU ms/req | mock CPU ms/req (direct) | store CPU ms/req "
        "| store calls/req (all, under load) | read / write units/req |",
        "|---|---:|---:|---:|---|---:|",
    ]
    for name, title in TITLES.items():
        phase = summary.get(name)
        if phase is None:
            continue
        gw = phase["cpu_ms_per_request"]["gateway"]
        direct = phase["cpu_ms_per_request"]["direct"]
        calls = phase["store_calls_per_request"]["gateway"]
        ops = ", ".join(f"{op} {n:.2f}" for op, n in calls.items() if op != "total")
        units = phase.get("capacity_units_per_request", {}).get("gateway", {})
        lines.append(
            f"| {title} | {_f(gw['gateway'])} | {_f(direct['upstream'])} | {_f(gw['store'])} "
            f"| {_f(calls.get('total', 0.0))} ({ops}) "
            f"| {_f(units.get('read', 0.0))} / {_f(units.get('write', 0.0))} |"
        )
    return lines


def markdown(results: dict[str, Any], summary: dict[str, Any], goals: list[dict[str, Any]]) -> str:
    """The whole results page."""
    meta = results["meta"]
    lines = [
        "# edgeproxy benchmark results",
        "",
        f"- date: {meta['date']}; mode: {'smoke' if meta['smoke'] else 'full'}"
        f" ({meta['rounds']} rounds, {meta['seconds']} s per phase and side)",
        f"- machine: {meta['cpu']}, {meta['nproc']} CPUs, {meta['kernel']}",
        f"- Python {meta['python']}; load generator: {meta['wrk'] or 'wrk absent: bench.client'}",
        "- everything on loopback: embedded DynamoDB (moto), mock upstream, gateway, load "
        "generator; each in its own process",
        "",
        "## Direct to the mock vs through edgeproxy",
        "",
        *comparison_table(summary),
        "",
        "## Cost per request",
        "",
        *resources_table(summary),
        "",
        "Store round trip (p50, aiobotocore replay of the gateway's own request): "
        + ", ".join(f"{op} {_f(ms)} ms" for op, ms in summary["store_rtt_ms"].items()),
        "",
        "## DynamoDB calls per request: what each answer waited for (sequential requests)",
        "",
        "A call counts before a moment if the store had answered it by then. Margins: the "
        "latest critical call finished that long before the answer's end (negative), the "
        "earliest other one that long after it.",
        "",
        "| request | before first token | before end of answer | after the answer | "
        "critical | after | margins (ms) | p50 (ms) |",
        "|---|---|---|---|---:|---:|---:|---:|",
    ]
    for name, row in results["critical_path"].items():
        cells = [
            ", ".join(f"{op} {n:.2f}" for op, n in row[part].items()) or "-"
            for part in ("before_first_token", "before_end", "after_end")
        ]
        lines.append(
            f"| {name} | {' | '.join(cells)} | {_f(row['critical_per_request'])} "
            f"| {_f(row['after_per_request'])} "
            f"| {_f(row['closest_critical_ms'])} / +{_f(row['closest_after_ms'])} "
            f"| {_f(row.get('p50_ms'))} |"
        )
    stream = results["critical_path"].get("stream", {})
    cold = results["cold_start"]
    mem = results["memory_mib"]
    lines += [
        "",
        f"Stream: `[DONE]` to end of body, p50: {_f(stream.get('done_to_end_ms_p50'))} ms.",
        "",
        "## Memory, cold start, imports",
        "",
        f"- gateway process (runner, uvicorn): RSS {_f(mem['gateway']['VmRSS'], 1)} MiB after "
        f"load, peak {_f(mem['gateway']['VmHWM'], 1)} MiB",
        f"- Lambda handler, fresh interpreter (median of {cold['repeats']}): interpreter start "
        f"{_f(cold['interpreter_s'], 3)} s, import + init {_f(cold['import_init_s'], 3)} s, "
        f"first event {_f(cold['first_event_s'], 3)} s, cold start total "
        f"{_f(cold['cold_start_s'], 3)} s, warm event {_f(1000 * cold['warm_event_s'])} ms, "
        f"RSS {_f(cold['rss_after_events_mib'], 1)} MiB, {cold['modules']} modules; "
        "store calls per warm event, all inside the invocation: "
        + ", ".join(f"{op} {n:.2f}" for op, n in cold["warm_store_calls"].items()),
        "",
        "| import (fresh interpreter, alone) | s |",
        "|---|---:|",
        *[f"| {name} | {_f(s, 3)} |" for name, s in results["import_s"].items()],
        "",
        "| import of edgeproxy.api.handler by package (-X importtime, self time summed) | s |",
        "|---|---:|",
        *[f"| {name} | {_f(s, 3)} |" for name, s in results["import_tree_s"]],
        "",
        "## Targets",
        "",
        "| target | measured | limit | result |",
        "|---|---:|---:|---|",
        *[
            f"| {g['target']} | {_f(g['value'])} | {g['rule']} ({_f(g['limit'])}) | "
            f"{'PASS' if g['pass'] else 'MISS'} |"
            for g in goals
        ],
    ]
    profile = results.get("profile")
    if profile:
        lines += [
            "",
            f"## Profile ({profile['requests']} sequential chat requests, in-process ASGI, "
            f"cProfile; per request)",
            "",
            f"CPU under the profiler: {_f(1000 * profile['cpu_s'] / profile['requests'])} ms "
            "per request (cProfile roughly doubles Python-heavy code).",
            "",
            "| package | self ms/req |",
            "|---|---:|",
            *[
                f"| {name} | {_f(ms, 3)} |"
                for name, ms in list(profile["by_package_ms"].items())[:15]
            ],
        ]
    return "\n".join(lines) + "\n"
