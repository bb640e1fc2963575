"""The sam-built scheduled jobs (HealthJobFunction, QuotaRefreshFunction): CPU and RSS per run.

Each repeat is a fresh ``python3.12 -I -S -B`` (``bench/job_child.py``) with
only the built function and SharedLayer on ``sys.path``: it imports ``app``
and invokes it with its scheduled event from ``events/`` twice (the first
builds the clients; the second is a warm run, as most runs of a job that
fires every minute are), against the bench's store. ``bench.built`` runs it
beside the proxy function and prints it under ``jobs``.
"""

from __future__ import annotations

import json
import statistics
from pathlib import Path
from typing import Any

from bench.child import run_child
from bench.coldstart import lambda_env

ROOT = Path(__file__).resolve().parents[1]
CHILD = Path(__file__).with_name("job_child.py")
# The built function's folder, the scheduled event it is invoked with, its memory size.
JOBS = {
    "HealthJobFunction": ("health_job.json", 256),
    "QuotaRefreshFunction": ("quota_refresh.json", 256),
}


def fresh_runs(build_dir: Path, function: str, store_url: str, table: str, repeats: int) -> list[dict[str, Any]]:  # fmt: skip
    """``repeats`` fresh processes of one built job function; their raw timings."""
    event = ROOT / "events" / JOBS[function][0]
    runs = []
    for _ in range(repeats):
        env = lambda_env(store_url, table)
        spawned, data = run_child(CHILD, build_dir, function, [str(event)], env)
        data["cold_start_s"] = data["imported"] - spawned + data["first_invocation_s"]
        runs.append(data)
    return runs


def summary(runs: list[dict[str, Any]], memory_mb: int) -> dict[str, Any]:
    """Medians over the fresh runs; the CPU-bound time at the function's own memory size."""
    keys = (
        "cold_start_s",
        "import_cpu_s",
        "first_invocation_s",
        "first_invocation_cpu_s",
        "warm_invocation_s",
        "warm_invocation_cpu_s",
    )
    out: dict[str, Any] = {k: statistics.median(r[k] for r in runs) for k in keys}
    for key in ("memory_after_import_mib", "memory_after_events_mib"):
        out[key.replace("memory", "rss")] = statistics.median(r[key]["VmRSS"] for r in runs)
    out["peak_rss_mib"] = max(r["memory_after_events_mib"]["VmHWM"] for r in runs)
    out["answer"] = runs[-1]["answers"][-1]
    out["modules"] = runs[-1]["modules"]
    out["repeats"] = len(runs)
    out["memory_mb"] = memory_mb
    return out


def measure(build_dir: Path, store_url: str, table: str, repeats: int) -> dict[str, Any]:
    """Every job function's summary, by logical id."""
    return {
        function: summary(fresh_runs(build_dir, function, store_url, table, repeats), memory)
        for function, (_event, memory) in JOBS.items()
    }


def lines(jobs: dict[str, Any] | None) -> list[str]:
    """The jobs' rows for ``compare_report`` (a markdown table)."""
    if not jobs:
        return []
    rows = [
        "## The sam-built scheduled jobs (fresh `python3.12 -I -S -B`, stub store)",
        "",
        "| function | memory (MB) | import CPU (ms) | first run CPU (ms) | warm run CPU (ms) "
        "| warm run wall (ms) | RSS after (MiB) | answer |",
        "|---|---:|---:|---:|---:|---:|---:|---|",
    ]
    for name, job in jobs.items():
        rows.append(
            f"| {name} | {job['memory_mb']} | {job['import_cpu_s'] * 1000:.0f} | "
            f"{job['first_invocation_cpu_s'] * 1000:.1f} | "
            f"{job['warm_invocation_cpu_s'] * 1000:.1f} | {job['warm_invocation_s'] * 1000:.1f} | "
            f"{job['rss_after_events_mib']:.1f} | `{json.dumps(job['answer'])}` |"
        )
    return [*rows, ""]
