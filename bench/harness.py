"""The benchmark run: start the stack, alternate direct and gateway phases, gather the rest.

Each load phase runs against the mock directly and then through edgeproxy
(the order swaps every round, so drift on a shared machine hits both), and
records the CPU each process spent and the store calls it caused.
"""

from __future__ import annotations

import asyncio
import json
import math
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench import accounting, client, coldstart, wrk
from bench.processes import ROOT, Stack, cpu_seconds, memory_mib
from bench.workloads import REBIND_GAP_S, REBINDING_MODEL, Call, chat, embeddings

SIDES = ("direct", "gateway")


@dataclass(frozen=True, slots=True)
class Plan:
    """How long and how often: the full run or the CI smoke run."""

    smoke: bool
    rounds: int
    seconds: float
    warmup_s: float
    rtt_calls: int
    sequential: int
    cold_repeats: int
    profile_requests: int

    @classmethod
    def of(cls, smoke: bool) -> Plan:
        """The plan for ``make bench`` (~4 min) or ``make bench-smoke`` (well under a minute)."""
        if smoke:
            return cls(True, 1, 1, 0.5, 20, 6, 1, 20)
        return cls(False, 3, 5, 2, 200, 30, 3, 300)


@dataclass(frozen=True, slots=True)
class Phase:
    """One workload: the call (direct and via gateway), concurrency, the measuring tool."""

    name: str
    make: Any  # (direct: bool) -> Call
    connections: int
    stream_client: bool  # measured by bench.client (TTFT) rather than wrk
    seconds_factor: float = 1.0


PHASES = (
    Phase("chat_c1", lambda d: chat(d), 1, False),
    Phase("chat_c32", lambda d: chat(d), 32, False),
    Phase("stream_c1", lambda d: chat(d, stream=True), 1, True, 0.6),
    Phase("stream_c8", lambda d: chat(d, stream=True), 8, True),
    Phase("stream_c8_wrk", lambda d: chat(d, stream=True), 8, False, 0.6),
    Phase("embed_c1", lambda d: embeddings(d), 1, False, 0.6),
)


class Harness:
    """Runs the plan on a started stack; ``results`` collects everything measured."""

    def __init__(self, stack: Stack, plan: Plan, wrk_binary: str | None) -> None:
        self.stack = stack
        self.plan = plan
        self.wrk = wrk_binary
        self.results: dict[str, Any] = {"phases": {}, "store_rtt_rounds": []}

    def url(self, side: str) -> str:
        """Where ``side``'s requests go: mock port A, or the gateway."""
        return self.stack.upstream_url(0) if side == "direct" else self.stack.gateway_url

    def tool(self, phase: Phase) -> str:
        """Which load generator measures ``phase``."""
        if phase.stream_client or self.wrk is None:
            return "bench.client (asyncio)"
        return "wrk"

    def measure(self, phase: Phase, side: str, seconds: float) -> dict[str, Any]:
        """One run of ``phase`` on one side, with CPU and store calls."""
        call: Call = phase.make(side == "direct")
        url = self.url(side)
        pids = {name: self.stack.pid(name) for name in ("gateway", "upstream", "store")}
        self.stack.store_calls(clear=True)
        cpu = {name: cpu_seconds(pid) for name, pid in pids.items()}
        out: dict[str, Any]
        if phase.stream_client or self.wrk is None:
            samples = asyncio.run(client.closed_loop(url, call, phase.connections, seconds))
            out = _sample_stats(samples, seconds, phase.stream_client)
        else:
            result = wrk.run(self.wrk, url, call, phase.connections, seconds)
            out = {
                "requests": result.requests,
                "rps": result.rps,
                "p50": result.p50,
                "p90": result.p90,
                "p99": result.p99,
            }
        requests = out["requests"]
        out["cpu_ms_per_request"] = {
            name: 1000 * (cpu_seconds(pid) - cpu[name]) / requests for name, pid in pids.items()
        }
        log = self.stack.store_calls(clear=True)
        out["store_calls_per_request"] = accounting.per_request(log["calls"], requests)
        out["capacity_units_per_request"] = {
            kind: units / requests for kind, units in log.get("units", {}).items()
        }
        self.stack.check_alive()
        return out

    def warm_up(self) -> None:
        """Every call on both sides for a moment: clients built, pools and bindings in place."""
        for phase in PHASES:
            for side in SIDES:
                call = phase.make(side == "direct")
                asyncio.run(client.closed_loop(self.url(side), call, 4, self.plan.warmup_s))

    def rounds(self) -> None:
        """``plan.rounds`` rounds of every phase, both sides, alternating which goes first."""
        for index in range(self.plan.rounds):
            sides = SIDES if index % 2 == 0 else tuple(reversed(SIDES))
            for phase in PHASES:
                entry = self.results["phases"].setdefault(
                    phase.name,
                    {"tool": self.tool(phase), "connections": phase.connections, "rounds": []},
                )
                seconds = max(1.0, self.plan.seconds * phase.seconds_factor)
                measured = {side: self.measure(phase, side, seconds) for side in sides}
                entry["rounds"].append(measured)
                _progress(phase.name, index, measured)
            samples = self.stack.store_calls()["samples"]
            rtt = asyncio.run(
                accounting.store_rtt(self.stack.store_url, samples, self.plan.rtt_calls)
            )
            self.results["store_rtt_rounds"].append(rtt)

    def critical_path(self) -> None:
        """Sequential requests with gaps: which store calls each answer waited for."""
        gap = 0.05
        out = {}
        # The last two: every request rewrites its binding (a new conversation, a renewal,
        # a failover's move), which lands before the answer's end.
        for name, call, spaced in (
            ("chat", chat(False), gap),
            ("stream", chat(False, stream=True), gap),
            ("embeddings", embeddings(False), gap),
            ("chat, binding written", chat(False, model=REBINDING_MODEL), REBIND_GAP_S),
            ("stream, binding written", chat(False, True, REBINDING_MODEL), REBIND_GAP_S),
        ):
            self.stack.store_calls(clear=True)
            samples = asyncio.run(
                client.sequential(self.stack.gateway_url, call, self.plan.sequential, spaced)
            )
            time.sleep(spaced)
            log = self.stack.store_calls(clear=True)
            out[name] = accounting.classify(samples, log["calls"])
            out[name]["server_ms"] = accounting.server_ms(log["calls"])
            out[name]["p50_ms"] = statistics.median(s.latency_ms for s in samples)
            if name == "stream":
                gaps = [1000 * (s.end - s.done) for s in samples if s.done is not None]
                out[name]["done_to_end_ms_p50"] = statistics.median(gaps) if gaps else None
        self.results["critical_path"] = out

    def memory(self) -> None:
        """Resident memory of each process after the load."""
        self.results["memory_mib"] = {
            name: memory_mib(self.stack.pid(name)) for name in ("gateway", "upstream", "store")
        }

    def cold(self) -> None:
        """Cold start of the Lambda handler, dependency import times, and the import tree."""
        table = self.stack.table
        self.results["cold_start"] = coldstart.cold_start(
            self.stack.store_url, table, self.plan.cold_repeats
        )
        self.results["import_tree_s"] = coldstart.import_tree()
        self.results["import_s"] = {} if self.plan.smoke else coldstart.import_times()

    def profile(self) -> None:
        """cProfile of sequential requests through the ASGI app, in a fresh process."""
        with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as out:
            path = Path(out.name)
        try:
            subprocess.run(  # noqa: S603 - our own interpreter and module
                [
                    sys.executable,
                    *("-m", "bench.profiling", self.stack.store_url, self.stack.table),
                    *(str(self.plan.profile_requests), str(path)),
                ],
                cwd=ROOT,
                check=True,
                timeout=300,
                env=coldstart.lambda_env(self.stack.store_url, self.stack.table),
            )
            self.results["profile"] = json.loads(path.read_text())
        finally:
            path.unlink(missing_ok=True)


def _sample_stats(samples: list[client.Sample], seconds: float, stream: bool) -> dict[str, Any]:
    latencies = sorted(s.latency_ms for s in samples)
    out: dict[str, Any] = {
        "requests": len(samples),
        "rps": len(samples) / seconds,
        "p50": _pct(latencies, 50),
        "p90": _pct(latencies, 90),
        "p99": _pct(latencies, 99),
    }
    if stream:
        ttft = sorted(s.ttft_ms for s in samples)
        out.update(ttft_p50=_pct(ttft, 50), ttft_p90=_pct(ttft, 90), ttft_p99=_pct(ttft, 99))
    return out


def _pct(values: list[float], pct: float) -> float:
    """Nearest-rank percentile of sorted ``values``."""
    if not values:
        return float("nan")
    rank = math.ceil(pct / 100 * len(values))  # the smallest value with pct% at or below it
    return values[max(0, min(len(values), rank) - 1)]


def _progress(name: str, index: int, measured: dict[str, Any]) -> None:
    parts = [
        f"{side} p50={m['p50']:.2f}ms rps={m['rps']:.0f}" for side, m in sorted(measured.items())
    ]
    print(f"  round {index + 1} {name:14s} " + " | ".join(parts), flush=True)


def run(plan: Plan, wrk_binary: str | None) -> dict[str, Any]:
    """Start the stack and run every part of the plan; the raw results."""
    table = f"bench-{uuid.uuid4().hex[:8]}"
    with Stack.start(table) as stack:
        harness = Harness(stack, plan, wrk_binary)
        _wait_ready(stack)
        print("warming up", flush=True)
        harness.warm_up()
        print("load phases (direct vs gateway)", flush=True)
        harness.rounds()
        print("critical path accounting", flush=True)
        harness.critical_path()
        harness.memory()
        print("cold start and imports", flush=True)
        harness.cold()
        print("profile", flush=True)
        harness.profile()
        return harness.results


def _wait_ready(stack: Stack) -> None:
    """The runner prints its address before uvicorn listens: wait for a real answer."""
    deadline = time.monotonic() + 30
    while True:
        try:
            asyncio.run(client.sequential(stack.gateway_url, chat(False), 1, 0))
            return
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)
