"""The artifact ``sam build`` produced, run as Lambda runs it: each function's CPU and RSS.

    .venv/bin/python -m bench.built [--build-dir .aws-sam/build] [--repeats 7]
    .venv/bin/python -m bench.built --build-dir NEW --baseline OLD   # the two proxies, alternated
        [--stream-repeats N (repeats // 2)] [--streams 5]

Each repeat is a fresh ``python3.12 -I -S -B`` (``bench/built_child.py``) with
only the built ProxyFunction and SharedLayer on ``sys.path``: it imports
``app``, serves ``events/chat.json`` (the first event builds the clients and
reads the configuration and the ``ssm:`` admin key, as deployed) and then
warm events, against the bench's instant stub store (``bench.store_server
--stub``, armed; its SSM is moto's) and mock upstream. Without
``--build-dir`` it runs ``sam build`` first (``tests/handlers/artifact.py``:
this machine's architecture, about a minute). Figures are medians over the
fresh processes; the machine is shared, so compare runs of the same moment.

Lambda gives CPU in proportion to memory (1769 MB is one vCPU): ``shares``
models a request's CPU-bound time at a memory size as measured CPU / share.

Beside the proxy, on the same store and mocks: the StreamFunction under
uvicorn (``built_stream``: CPU per stream and per chunk, and a 30 s stream's
price at each size) under ``stream``, and the scheduled jobs (``built_jobs``)
under ``jobs``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # run as a script: make the bench package importable

from bench import built_jobs, built_stream  # noqa: E402
from bench.child import run_child  # noqa: E402
from bench.coldstart import lambda_env  # noqa: E402
from bench.processes import Stack, put_admin_key  # noqa: E402
from bench.workloads import CLIENT_KEY  # noqa: E402

CHILD = Path(__file__).with_name("built_child.py")
FULL_VCPU_MB = 1769  # Lambda: one vCPU at 1769 MB, CPU in proportion below
SIZES_MB = (256, 512, 1024)
WARM_EVENTS = 200  # a median over 200: steadier than 50 on a shared machine
# What the first chat event must not import (edgeproxy/aws/session.py, runtime.DeferredBedrock,
# api/deferred.py), its ssm: admin key included (aws/secrets.py's lean client, not
# aiobotocore's).
DEFERRED = (
    "aioboto3",
    "aiobotocore",
    "botocore.session",
    "edgeproxy.upstream.bedrock",
    "yaml",
    "edgeproxy.api.admin.routes",
)


def build(work: Path) -> Path:
    """``sam build`` of this checkout (for this machine's architecture) under ``work``."""
    from tests.handlers import artifact  # only when asked to build

    return artifact.build(work)


def fresh_runs(build_dir: Path, store_url: str, table: str, repeats: int) -> list[dict[str, Any]]:
    """``repeats`` fresh processes of the built proxy function; their raw timings."""
    event = json.loads((ROOT / "events/chat.json").read_text())
    event["headers"]["authorization"] = f"Bearer {CLIENT_KEY}"
    runs = []
    with tempfile.TemporaryDirectory() as work:
        event_path = Path(work) / "event.json"
        event_path.write_text(json.dumps(event))
        for _ in range(repeats):
            args = [str(event_path), str(WARM_EVENTS)]
            env = lambda_env(store_url, table)
            spawned, data = run_child(CHILD, build_dir, "ProxyFunction", args, env)
            data["interpreter_s"] = data["started"] - spawned
            data["import_init_s"] = data["imported"] - data["started"]
            data["first_event_s"] = data["first_event_done"] - data["imported"]
            data["cold_start_s"] = data["first_event_done"] - spawned
            runs.append(data)
    return runs


def summary(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Medians of the fresh runs, and the modelled time per memory size."""
    keys = (
        "interpreter_s",
        "import_init_s",
        "first_event_s",
        "cold_start_s",
        "import_cpu_s",
        "first_event_cpu_s",
        "warm_wall_s",
        "warm_cpu_s",
    )
    out: dict[str, Any] = {k: statistics.median(r[k] for r in runs) for k in keys}
    out["cold_start_range_s"] = [
        min(r["cold_start_s"] for r in runs),
        max(r["cold_start_s"] for r in runs),
    ]
    out["rss_after_events_mib"] = statistics.median(
        r["memory_after_events_mib"]["VmRSS"] for r in runs
    )
    out["modules"] = len(runs[-1]["modules"])
    out["deferred_loaded"] = sorted(set(runs[-1]["modules"]) & set(DEFERRED))
    out["repeats"] = len(runs)
    out["shares"] = shares(out["import_cpu_s"] + out["first_event_cpu_s"], out["warm_cpu_s"])
    return out


def share(size_mb: int) -> float:
    """The CPU share Lambda gives ``size_mb``: size / 1769 MB of one vCPU, one vCPU at most."""
    return min(1.0, size_mb / FULL_VCPU_MB)


def shares(cold_cpu_s: float, warm_cpu_s: float) -> dict[str, dict[str, float]]:
    """CPU-bound seconds at each memory size: measured CPU / (size / 1769 MB), one vCPU at most."""
    out = {}
    for size in SIZES_MB:
        out[str(size)] = {
            "share": round(share(size), 3),
            "cold_cpu_s": cold_cpu_s / share(size),
            "warm_cpu_ms": warm_cpu_s * 1000 / share(size),
        }
    return out


def measure(
    build_dir: Path, repeats: int, stream_repeats: int | None = None, streams: int = 5
) -> dict[str, Any]:
    """Start the stub store and mocks, warm the stub, arm it, then measure every function.

    The proxy's summary, with ``stream`` (``built_stream``: ``stream_repeats`` servers,
    ``repeats // 2`` unless told, of ``streams`` long streams each) and ``jobs``
    (``built_jobs``, ``repeats`` processes each).
    """
    stream_repeats = stream_repeats or max(1, repeats // 2)
    table = f"bench-{uuid.uuid4().hex[:8]}"
    with Stack.start(table, stub=True) as stack:
        put_admin_key(stack.store_url)  # the ssm: admin key lambda_env names
        mocks = [stack.upstream_url(0), stack.upstream_url(1)]
        # The store sees every read once, before the stub replays them.
        fresh_runs(build_dir, stack.store_url, table, 1)
        built_jobs.measure(build_dir, stack.store_url, table, 1)
        built_stream.measure(build_dir, stack.store_url, table, mocks, 1, 1)
        stack.arm_stub()
        out = summary(fresh_runs(build_dir, stack.store_url, table, repeats))
        stream = built_stream.measure(
            build_dir, stack.store_url, table, mocks, stream_repeats, streams
        )
        jobs = built_jobs.measure(build_dir, stack.store_url, table, repeats)
    stream["sizes"] = built_stream.sizes(stream, {size: share(size) for size in SIZES_MB})
    for job in jobs.values():
        cold = job["import_cpu_s"] + job["first_invocation_cpu_s"]
        job["shares"] = shares(cold, job["warm_invocation_cpu_s"])
    return {**out, "stream": stream, "jobs": jobs}


def measure_pair(build_dir: Path, baseline: Path, repeats: int) -> dict[str, Any]:
    """The proxy and the jobs of ``build_dir`` against ``baseline``'s, one fresh process
    of each in turn.

    On a shared machine the speed moves by a third from one minute to the next:
    alternating process by process on one stack puts both builds in the same
    minutes, so their ratios hold where the absolute figures drift. The jobs
    (``built_jobs``) are alternated the same way and reported under ``jobs``.
    """
    table = f"bench-{uuid.uuid4().hex[:8]}"
    runs: dict[str, list[dict[str, Any]]] = {"after": [], "before": []}
    job_runs: dict[str, dict[str, list[dict[str, Any]]]] = {
        name: {"after": [], "before": []} for name in built_jobs.JOBS
    }
    builds = {"after": build_dir, "before": baseline}
    with Stack.start(table, stub=True) as stack:
        put_admin_key(stack.store_url)  # the ssm: admin key lambda_env names
        for build_path in builds.values():  # the store sees every read once
            fresh_runs(build_path, stack.store_url, table, 1)
            built_jobs.measure(build_path, stack.store_url, table, 1)
        stack.arm_stub()
        for _ in range(repeats):
            for side, build_path in builds.items():
                runs[side] += fresh_runs(build_path, stack.store_url, table, 1)
                for name, sides in job_runs.items():
                    sides[side] += built_jobs.fresh_runs(
                        build_path, name, stack.store_url, table, 1
                    )
    after, before = summary(runs["after"]), summary(runs["before"])
    keys = ("cold_start_s", "import_cpu_s", "first_event_cpu_s", "warm_cpu_s", "warm_wall_s")
    jobs = {name: _job_pair(name, sides) for name, sides in job_runs.items()}
    return {"after": after, "before": before, "after_over_before": _ratios(after, before, keys), "jobs": jobs}  # fmt: skip


def _job_pair(name: str, sides: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    memory = built_jobs.JOBS[name][1]
    after, before = (built_jobs.summary(sides[side], memory) for side in ("after", "before"))
    keys = ("cold_start_s", "import_cpu_s", "first_invocation_cpu_s", "warm_invocation_cpu_s")
    return {"after": after, "before": before, "after_over_before": _ratios(after, before, keys)}


def _ratios(after: dict[str, Any], before: dict[str, Any], keys: tuple[str, ...]) -> dict[str, float]:  # fmt: skip
    return {k: after[k] / before[k] for k in keys if before[k]}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0] if __doc__ else None)
    parser.add_argument("--build-dir", type=Path, help="an existing sam build directory")
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--stream-repeats", type=int, help="stream servers (repeats // 2)")
    parser.add_argument("--streams", type=int, default=5, help="long streams per server")
    parser.add_argument(
        "--baseline", type=Path, help="another sam build: its proxy alternated with this one's"
    )
    plan = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as work:
        build_dir = plan.build_dir or build(Path(work))
        if plan.baseline is not None:
            result = measure_pair(build_dir, plan.baseline, plan.repeats)
        else:
            result = measure(build_dir, plan.repeats, plan.stream_repeats, plan.streams)
    result["load_average"] = os.getloadavg()
    print(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
