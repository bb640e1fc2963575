"""``make bench-compare``: the same workloads against direct, the floor, LiteLLM and edgeproxy.

    .venv/bin/python bench/compare.py            # ~6 minutes after installs; bench/results/
    .venv/bin/python bench/compare.py --quick    # 1 round of 2 s: checks the wiring

Targets, all on loopback, one worker each, against one shared mock upstream:
direct (the mock), the floor (``bench/floor.js``: Node's ``http``, the fastest
pass-through this machine runs), the bare Starlette + httpx pass-through,
LiteLLM in memory, LiteLLM with Redis shared state, edgeproxy on the embedded
store (as ``make run`` runs it: moto in its own process), the same with the
request log off (``edgeproxy_nolog``: what the log costs, in the same run) and
edgeproxy on the instant stub store (``bench.store_server --stub``). Each round runs every
phase on every target, the order of targets rotating from round to round so
drift on a shared machine spreads over all of them. ``make bench`` does not
need any of this.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # run as a script: make the bench package importable

from bench import built, client, coldstart, compare_report, contenders, wrk  # noqa: E402
from bench.harness import _sample_stats  # noqa: E402
from bench.processes import Stack, spawn, stop, tree_cpu_seconds, tree_rss_mib  # noqa: E402
from bench.workloads import Call, chat  # noqa: E402
from edgeproxy_dev.runner import MOCK_KEY  # noqa: E402


@dataclass
class Target:
    """One system under test: where to send requests, which calls, which processes it costs."""

    name: str
    url: str
    direct_body: bool  # the mock's own model name and key (direct, the floor)
    pids: list[int]
    stack: Stack | None = None
    extra: list[Any] = field(default_factory=list)

    def call(self, stream: bool) -> Call:
        return chat(self.direct_body, stream=stream)


PHASES: tuple[tuple[str, int, bool], ...] = (
    ("chat_c1", 1, False),
    ("chat_c32", 32, False),
    ("stream_c8", 8, True),
)


def first_answer(url: str, call: Call, timeout_s: float = 180) -> None:
    """Poll until ``call`` is answered 200 (a target's startup ends there)."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            asyncio.run(client.sequential(url, call, 1, 0))
            return
        except (OSError, RuntimeError, asyncio.IncompleteReadError):
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)


def measure(target: Target, phase: tuple[str, int, bool], seconds: float, tool: str | None) -> dict[str, Any]:  # fmt: skip
    """One phase on one target: latency, rate, CPU of its tree, store calls and units."""
    _name, connections, stream = phase
    call = target.call(stream)
    if target.stack is not None:
        target.stack.store_calls(clear=True)
    cpu = tree_cpu_seconds(target.pids)
    own = tree_cpu_seconds(target.pids[:1])
    if stream or tool is None:
        failed = [0]
        samples = asyncio.run(client.closed_loop(target.url, call, connections, seconds, failed))
        out = _sample_stats(samples, seconds, stream)
        out["failed"] = failed[0]
    else:
        # Not strict: a failed request is counted and reported, not the end of the run
        # (the embedded store's 2 s call deadline can run out in its queue at c=32).
        result = wrk.run(tool, target.url, call, connections, seconds, strict=False)
        out = {"requests": result.requests, "rps": result.rps, "p50": result.p50}
        out["p99"] = result.p99
        out["failed"] = result.failed
    requests = max(1, out["requests"])
    out["cpu_ms_per_request"] = 1000 * (tree_cpu_seconds(target.pids) - cpu) / requests
    if target.stack is not None:
        out["gateway_cpu_ms_per_request"] = (
            1000 * (tree_cpu_seconds(target.pids[:1]) - own) / requests
        )
        log = target.stack.store_calls(clear=True)
        out["store_calls_per_request"] = len(log["calls"]) / requests
        units = log.get("units", [0.0, 0.0])
        if isinstance(units, dict):  # {"read": r, "write": w}, as bench.units may report them
            units = [units.get("read", 0.0), units.get("write", 0.0)]
        out["units_per_request"] = [u / requests for u in units]
    return out


@contextlib.contextmanager
def started(plan: argparse.Namespace) -> Iterator[tuple[list[Target], dict[str, float]]]:
    """Start every target; yields them with their startup-to-first-answer seconds."""
    with contextlib.ExitStack() as stack:
        upstream, found = spawn(
            ["-m", "bench.upstream_server", MOCK_KEY], r"upstream on (\d+) (\d+)"
        )
        stack.callback(stop, upstream)
        ports = (int(found.group(1)), int(found.group(2)))
        startup: dict[str, float] = {}
        targets = [Target("direct", f"http://127.0.0.1:{ports[0]}", True, [])]

        def timed(name: str, start: Callable[[], Target]) -> None:
            began = time.monotonic()
            target = start()
            first_answer(target.url, target.call(False))
            startup[name] = time.monotonic() - began
            targets.append(target)
            print(f"  {name}: first answer after {startup[name]:.2f} s", flush=True)

        def floor() -> Target:
            proc, url = contenders.start_floor(ports[0])
            stack.callback(stop, proc)
            return Target("floor", url, True, [proc.pid])

        def starlette() -> Target:
            proc, url = contenders.start_starlette(ports[0])
            stack.callback(stop, proc)
            return Target("starlette", url, True, [proc.pid])

        def litellm(redis_binary: str | None) -> Target:
            pids = []
            redis_port = None
            if redis_binary is not None:
                redis_port = contenders.free_port()
                redis = contenders.start_redis(redis_binary, redis_port)
                stack.callback(_kill, redis)
                pids.append(redis.pid)
            config = Path(tempfile.mkdtemp(prefix="bench-litellm-")) / "config.yaml"
            config.write_text(contenders.litellm_config(ports[0], redis_port))
            port = contenders.free_port()
            proc = contenders.start_litellm(config, port)
            stack.callback(stop, proc)
            name = "litellm_redis" if redis_binary else "litellm"
            return Target(name, f"http://127.0.0.1:{port}", False, [proc.pid, *pids])

        def edgeproxy(stub: bool, request_log: bool = True) -> Target:
            table = f"bench-{uuid.uuid4().hex[:8]}"
            running = Stack.start(table, stub=stub, upstream_ports=ports, request_log=request_log)
            stack.callback(running.close)
            name = "edgeproxy_stub" if stub else "edgeproxy" if request_log else "edgeproxy_nolog"
            return Target(name, running.gateway_url, False, running.pids(), running)

        timed("floor", floor)
        timed("starlette", starlette)
        if not plan.no_litellm:
            timed("litellm", lambda: litellm(None))
            timed("litellm_redis", lambda: litellm(plan.redis))
        timed("edgeproxy", lambda: edgeproxy(False))
        timed("edgeproxy_nolog", lambda: edgeproxy(False, request_log=False))
        timed("edgeproxy_stub", lambda: edgeproxy(True))
        yield targets, startup


def _kill(proc: subprocess.Popen[bytes]) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def run(plan: argparse.Namespace, tool: str | None) -> dict[str, Any]:
    """Start, warm up, alternate rounds, then memory and cold start: the raw results."""
    results: dict[str, Any] = {"rounds": []}
    print("starting targets", flush=True)
    with started(plan) as (targets, startup):
        results["startup_s"] = startup
        print("warming up", flush=True)
        for target in targets:
            _warm(target, plan.warmup)
        for target in targets:
            if target.name == "edgeproxy_stub" and target.stack is not None:
                # Armed once warm: bindings and counters exist, as in a long-running store.
                target.stack.arm_stub()
                _warm(target, plan.warmup)
        for index in range(plan.rounds):
            shift = index % len(targets)
            order = targets[shift:] + targets[:shift]
            measured: dict[str, dict[str, Any]] = {}
            for phase in PHASES:
                row = measured.setdefault(phase[0], {})
                for target in order:
                    row[target.name] = measure(target, phase, plan.seconds, tool)
                _progress(index, phase[0], row)
            results["rounds"].append(measured)
        results["rss_mib"] = {t.name: tree_rss_mib(t.pids) for t in targets if t.pids}
        results["gateway_rss_mib"] = {
            t.name: tree_rss_mib(t.pids[:1]) for t in targets if t.stack is not None
        }
        embedded = next(t for t in targets if t.name == "edgeproxy")
        assert embedded.stack is not None
        print("cold start of the Lambda handler", flush=True)
        results["cold_start"] = coldstart.cold_start(
            embedded.stack.store_url, embedded.stack.table, plan.cold_repeats
        )
    if not plan.no_built:
        print("the sam-built functions: cold start, CPU and RSS per request", flush=True)
        with tempfile.TemporaryDirectory() as work:
            build_dir = plan.build_dir or built.build(Path(work))
            results["built"] = built.measure(build_dir, plan.cold_repeats * 2 + 1)
    return results


def _warm(target: Target, seconds: float) -> None:
    for _name, connections, stream in PHASES:
        call = target.call(stream)
        asyncio.run(client.closed_loop(target.url, call, connections, seconds, [0]))


def _progress(index: int, phase: str, row: dict[str, dict[str, Any]]) -> None:
    key = "ttft_p50" if phase.startswith("stream") else "p50"
    parts = [
        f"{name} {m[key]:.1f}ms {m['rps']:.0f}/s {m['cpu_ms_per_request']:.1f}cpu"
        for name, m in row.items()
    ]
    print(f"  round {index + 1} {phase}: " + " | ".join(parts), flush=True)


def _meta(plan: argparse.Namespace, tool: str | None, started_at: float) -> dict[str, Any]:
    from bench.run import _cpu_model

    return {
        "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "rounds": plan.rounds,
        "seconds": plan.seconds,
        "nproc": os.cpu_count(),
        "cpu": _cpu_model(),
        "kernel": platform.release(),
        "python": platform.python_version(),
        "litellm": "not run" if plan.no_litellm else contenders.LITELLM_VERSION,
        "redis": contenders.redis_version(plan.redis) if plan.redis else "no Redis",
        "tool": (wrk.version(tool) if tool else "bench.client") + " (streams: bench.client)",
        "elapsed_s": round(time.monotonic() - started_at, 1),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="1 round of 2 s (wiring check)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=4.0)
    parser.add_argument("--no-litellm", action="store_true", help="skip LiteLLM and Redis")
    parser.add_argument("--build-dir", type=Path, help="a sam build to measure (default: build)")
    parser.add_argument("--no-built", action="store_true", help="skip the sam-built function")
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results")
    plan = parser.parse_args(argv)
    if plan.quick:
        plan.rounds, plan.seconds = 1, 2.0
    plan.warmup = 1.0 if plan.quick else 2.0
    plan.cold_repeats = 1 if plan.quick else 3
    plan.redis = None
    if not plan.no_litellm:
        contenders.litellm_binary()  # fail early, before starting anything
        plan.redis = contenders.find_redis(install=True)
        if plan.redis is None:
            raise SystemExit("redis-server not found (apt-get install redis-server)")
    tool = wrk.find_wrk(install=True)
    started_at = time.monotonic()
    results = run(plan, tool)
    results["meta"] = _meta(plan, tool, started_at)
    rows = compare_report.figures(results)
    goals = compare_report.targets(
        rows, results["cold_start"]["cold_start_s"], results.get("built")
    )
    text = compare_report.markdown(results, rows, goals)
    print()
    print(text)
    print(f"(took {results['meta']['elapsed_s']} s)")
    if not plan.quick:
        plan.out.mkdir(parents=True, exist_ok=True)
        (plan.out / "compare.md").write_text(text)
        data = {"figures": rows, "targets": goals, "raw": results}
        (plan.out / "compare.json").write_text(json.dumps(data, indent=1, default=str) + "\n")
        print(f"wrote {plan.out / 'compare.md'} and {plan.out / 'compare.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
