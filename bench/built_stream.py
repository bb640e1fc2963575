"""The sam-built StreamFunction under uvicorn, as run.sh starts it: CPU per stream and per chunk.

On Lambda the Web Adapter runs ``functions/stream/run.sh``, which starts
uvicorn on ``app:app`` from the function's folder (uvicorn, uvloop and
httptools ship there) with the layer on ``PYTHONPATH``. Here the same
command runs under a bare ``python3.12 -P -S -B`` with only those two
folders on ``sys.path``, the proxy's environment (``coldstart.lambda_env``),
against the bench's stub store and mock upstreams; no adapter in between.

Measured from outside, on the server process (``/proc/<pid>/stat``): the
start-up to the first ``/health`` answer and its CPU, the first stream
(it builds the clients), then warm streams one after another: ``4 x count``
of ``SHORT_CHUNKS`` content chunks and ``count`` of ``LONG_CHUNKS``, the
mock pausing ``CHUNK_DELAY_MS`` between chunks so each is relayed on its
own, at the rate a stream of ``CHUNKS_PER_S`` comes. /proc counts CPU in
10 ms ticks, so each figure is a total over many streams. The two lengths
fit ``fixed + chunks x per_chunk``; a stream of ``STREAM_S`` seconds at
``CHUNKS_PER_S`` costs that CPU, and is billed its whole duration (``sizes``).
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import IO, Any

import httpx

from bench.coldstart import lambda_env
from bench.contenders import free_port
from bench.processes import cpu_seconds, die_with_parent, memory_mib, stop
from bench.workloads import chat

SHORT_CHUNKS = 10
LONG_CHUNKS = 100
STREAM_S = 30
CHUNKS_PER_S = 50  # a fast model's output rate: one content chunk per token
# Paced as that model would be: a chunk costs more CPU the further apart they come
# (measured: 0.3-0.4 ms at 5 ms apart, 0.5-0.7 ms at 20 ms, on a loaded machine).
CHUNK_DELAY_MS = 1000 // CHUNKS_PER_S
# Lambda arm64, us-east-1, first pricing tier (aws.amazon.com/lambda/pricing).
ARM64_USD_PER_GB_S = 0.0000133334
USD_PER_REQUEST = 0.20 / 1_000_000
HEALTH_TIMEOUT_S = 60.0


def set_stream(upstream_urls: list[str], chunks: int) -> None:
    """Every chat stream the mocks answer from now on: ``chunks`` words, paced."""
    fault = {"content": " ".join(["token"] * chunks), "chunk_delay_ms": CHUNK_DELAY_MS}
    for url in upstream_urls:
        request = urllib.request.Request(  # noqa: S310 - our own loopback mock
            url + "/_mock/faults",
            data=json.dumps({"faults": [], "persistent": fault}).encode(),
            headers={"content-type": "application/json"},
            method="POST",
        )
        with urllib.request.urlopen(request, timeout=10) as answer:  # noqa: S310
            answer.read()


def clear_stream(upstream_urls: list[str]) -> None:
    """The mocks' ordinary answers again (the proxy's runs share these mocks)."""
    for url in upstream_urls:
        request = urllib.request.Request(url + "/_mock/faults", method="DELETE")  # noqa: S310
        with urllib.request.urlopen(request, timeout=10) as answer:  # noqa: S310
            answer.read()


def start(build_dir: Path, env: dict[str, str], log: IO[bytes]) -> tuple[Any, str, float]:
    """run.sh's uvicorn on the built function; (process, base URL, seconds to first /health).

    Its output (the EMF metrics and logs Lambda would send to CloudWatch) goes to ``log``.
    """
    from tests.handlers.artifact import lambda_python

    function = build_dir / "StreamFunction"
    env = {
        **env,
        # run.sh: the function's own folder first, then the layer (/opt/python on Lambda).
        "PYTHONPATH": f"{function}{os.pathsep}{build_dir / 'SharedLayer' / 'python'}",
        "EDGEPROXY_MAX_TOTAL_MS": "880000",  # the template's StreamFunction setting
    }
    port = free_port()
    spawned = time.monotonic()
    proc = subprocess.Popen(  # noqa: S603 - the Lambda runtime's python, run.sh's arguments
        [
            *(str(lambda_python()), "-P", "-S", "-B", "-m", "uvicorn"),
            *("--host", "127.0.0.1", "--port", str(port), "--no-access-log"),
            *("--timeout-keep-alive", "60", "app:app"),
        ],
        cwd=function,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=log,
        stderr=subprocess.STDOUT,
        preexec_fn=die_with_parent,  # only a prctl call: safe before exec
    )
    base = f"http://127.0.0.1:{port}"
    deadline = spawned + HEALTH_TIMEOUT_S
    while True:  # the adapter's readiness check: /health answers 200
        try:
            if httpx.get(base + "/health", timeout=1).status_code == 200:
                return proc, base, time.monotonic() - spawned
        except httpx.TransportError:
            pass
        if proc.poll() is not None or time.monotonic() > deadline:
            stop(proc)
            log.seek(0)
            tail = log.read()[-2000:].decode(errors="replace")
            raise RuntimeError(f"the built stream function never answered /health:\n{tail}")


def stream(client: httpx.Client, base: str) -> int:
    """One streamed chat completion through the function; its data chunks ([DONE] aside)."""
    call = chat(direct=False, stream=True)
    chunks = 0
    with client.stream(
        "POST", base + call.path, content=call.body, headers=call.headers, timeout=60
    ) as answer:
        if answer.status_code != 200:
            raise RuntimeError(f"the stream answered {answer.status_code}: {answer.read()!r}")
        for line in answer.iter_lines():
            if line.startswith("data: ") and line != "data: [DONE]":
                chunks += 1
    return chunks


def streams(client: httpx.Client, base: str, pid: int, count: int) -> tuple[float, float, int]:
    """``count`` streams one after another: (server CPU seconds each, wall seconds each, chunks)."""
    cpu, started = cpu_seconds(pid), time.monotonic()
    chunks = [stream(client, base) for _ in range(count)]
    if len(set(chunks)) != 1:
        raise RuntimeError(f"the streams differ in length: {chunks}")
    return (cpu_seconds(pid) - cpu) / count, (time.monotonic() - started) / count, chunks[0]


def run(build_dir: Path, store_url: str, table: str, upstream_urls: list[str], count: int) -> dict[str, Any]:  # fmt: skip
    """One server: start-up, the first stream, then ``count`` short and long warm streams."""
    set_stream(upstream_urls, SHORT_CHUNKS)
    with tempfile.TemporaryFile() as log:
        return _run(build_dir, lambda_env(store_url, table), upstream_urls, count, log)


def _run(build_dir: Path, env: dict[str, str], upstream_urls: list[str], count: int, log: IO[bytes]) -> dict[str, Any]:  # fmt: skip
    proc, base, ready_s = start(build_dir, env, log)
    try:
        out: dict[str, Any] = {"startup_s": ready_s, "startup_cpu_s": cpu_seconds(proc.pid)}
        out["rss_after_startup_mib"] = memory_mib(proc.pid)["VmRSS"]
        with httpx.Client() as client:
            out["first_stream_cpu_s"], out["first_stream_s"], _ = streams(client, base, proc.pid, 1)
            for name, chunks, times in (("short", SHORT_CHUNKS, 4), ("long", LONG_CHUNKS, 1)):
                set_stream(upstream_urls, chunks)
                stream(client, base)  # the mocks' new answer, once, before it is timed
                cpu, wall, seen = streams(client, base, proc.pid, count * times)
                out[name] = {"cpu_s": cpu, "wall_s": wall, "chunks": seen}
        out["rss_after_streams_mib"] = memory_mib(proc.pid)["VmRSS"]
        out["peak_rss_mib"] = memory_mib(proc.pid)["VmHWM"]
    finally:
        stop(proc)
        clear_stream(upstream_urls)  # a later proxy run must not get these long answers
    return out


def summary(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Medians over the servers; per chunk and fixed CPU from the two lengths."""
    out: dict[str, Any] = {
        k: statistics.median(r[k] for r in runs)
        for k in ("startup_s", "startup_cpu_s", "first_stream_cpu_s", "first_stream_s")
    }
    for key in ("rss_after_startup_mib", "rss_after_streams_mib", "peak_rss_mib"):
        out[key] = statistics.median(r[key] for r in runs)
    for name in ("short", "long"):
        out[f"{name}_stream"] = {
            k: statistics.median(r[name][k] for r in runs) for k in ("cpu_s", "wall_s", "chunks")
        }
    short, long = out["short_stream"], out["long_stream"]
    out["cpu_per_chunk_s"] = (long["cpu_s"] - short["cpu_s"]) / (long["chunks"] - short["chunks"])
    out["cpu_per_stream_s"] = short["cpu_s"] - short["chunks"] * out["cpu_per_chunk_s"]
    out["repeats"] = len(runs)
    return out


def sizes(stream: dict[str, Any], shares: dict[int, float]) -> dict[str, dict[str, float]]:
    """At each memory size (its CPU share): CPU-bound times, and a ``STREAM_S`` stream's price.

    The stream's billed duration is its own (the upstream sets it) unless its CPU-bound
    time is longer; Lambda bills memory in GB of 1024 MB.
    """
    cpu_s = stream["cpu_per_stream_s"] + STREAM_S * CHUNKS_PER_S * stream["cpu_per_chunk_s"]
    out = {}
    for size, share in shares.items():
        billed = max(float(STREAM_S), cpu_s / share)
        out[str(size)] = {
            "share": round(share, 3),
            "cold_cpu_s": (stream["startup_cpu_s"] + stream["first_stream_cpu_s"]) / share,
            "per_stream_cpu_ms": stream["cpu_per_stream_s"] * 1000 / share,
            "per_chunk_cpu_ms": stream["cpu_per_chunk_s"] * 1000 / share,
            "stream_cpu_bound_s": cpu_s / share,
            "stream_cpu_load": cpu_s / share / STREAM_S,
            "stream_usd": billed * size / 1024 * ARM64_USD_PER_GB_S + USD_PER_REQUEST,
        }
    return out


def measure(build_dir: Path, store_url: str, table: str, upstream_urls: list[str], repeats: int, count: int) -> dict[str, Any]:  # fmt: skip
    """``repeats`` fresh servers of ``count`` streams of each length: the summary."""
    return summary([run(build_dir, store_url, table, upstream_urls, count) for _ in range(repeats)])


def lines(stream: dict[str, Any] | None) -> list[str]:
    """The stream function's section for ``compare_report`` (markdown)."""
    if not stream:
        return []
    short, long = stream["short_stream"], stream["long_stream"]
    return [
        "## The sam-built StreamFunction (uvicorn in a bare `python3.12 -P -S -B`, stub store)",
        "",
        f"- start-up to the first /health answer: {stream['startup_s']:.3f} s, "
        f"{stream['startup_cpu_s'] * 1000:.0f} ms CPU; first stream "
        f"{stream['first_stream_cpu_s'] * 1000:.0f} ms CPU (it builds the clients); "
        f"median of {stream['repeats']} servers",
        f"- warm streams: {short['chunks']} chunks {short['cpu_s'] * 1000:.1f} ms CPU, "
        f"{long['chunks']} chunks {long['cpu_s'] * 1000:.1f} ms CPU "
        f"({CHUNK_DELAY_MS} ms apart): {stream['cpu_per_stream_s'] * 1000:.2f} ms a stream "
        f"+ {stream['cpu_per_chunk_s'] * 1000:.3f} ms a chunk",
        f"- RSS {stream['rss_after_startup_mib']:.1f} MiB after start-up, "
        f"{stream['rss_after_streams_mib']:.1f} MiB after the streams",
        "",
        f"| memory (MB) | CPU share | cold CPU-bound (s) | a stream (ms) | a chunk (ms) "
        f"| {STREAM_S} s stream: CPU-bound (s) | CPU load | price (USD, arm64) |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|",
        *[
            f"| {size} | {row['share']:.3f} | {row['cold_cpu_s']:.2f} | "
            f"{row['per_stream_cpu_ms']:.1f} | {row['per_chunk_cpu_ms']:.3f} | "
            f"{row['stream_cpu_bound_s']:.2f} | {row['stream_cpu_load']:.1%} | "
            f"{row['stream_usd']:.7f} |"
            for size, row in stream.get("sizes", {}).items()
        ],
        "",
        f"A {STREAM_S} s stream at {CHUNKS_PER_S} chunks/s is billed {STREAM_S} s at any of these "
        f"sizes (${ARM64_USD_PER_GB_S:.10f} per GB-s arm64, ${USD_PER_REQUEST * 1e6:.2f} per 1M "
        "requests, us-east-1); the CPU load is the share of its CPU it keeps busy.",
        "",
    ]
