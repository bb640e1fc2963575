"""CPU per request of two (or more) builds, alternating in one run: the gateway's and the store's.

    .venv/bin/python bench/alternate.py --build old=/tmp/old-tree --build new=. \\
        [--requests 300] [--rounds 6] [--stream]

Each build is a source tree (its ``shared/`` and ``infra/`` go first on the
gateway's path); each gets its own store, gateway and mock upstreams
(``processes.Stack``, the request log on). A round sends ``--requests``
sequential keep-alive requests to each build in turn, the order reversed
every other round (ABBA) so drift on a shared machine falls on both, and
reads from ``/proc`` the CPU time the gateway and the store spent on them,
background writes included (it waits until the store has been idle for
longer than the request log's window). It also counts the store calls per
request, by operation. On a busy machine the wall clock means nothing and
CPU time inflates too; only the ratio between builds of one run is a figure.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import os
import statistics
import sys
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import aiohttp

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # run as a script: make the bench package importable

from bench.processes import Stack, cpu_seconds  # noqa: E402
from bench.workloads import chat  # noqa: E402

WARMUP = 50
QUIET_S = 1.3  # longer than the request log's flush window (1 s)
SETTLE_DEADLINE_S = 15.0


@dataclass
class Build:
    """One build under test and its figures so far."""

    name: str
    tree: Path
    stack: Stack | None = None
    gateway_ms: list[float] = field(default_factory=list)
    store_ms: list[float] = field(default_factory=list)
    calls: collections.Counter[str] = field(default_factory=collections.Counter)
    requests: int = 0


async def drive(url: str, requests: int, stream: bool) -> None:
    """``requests`` chat requests, one after another, on one kept-alive connection."""
    call = chat(direct=False, stream=stream)
    async with aiohttp.ClientSession() as session:
        for _ in range(requests):
            async with session.post(url + call.path, data=call.body, headers=call.headers) as r:
                await r.read()
                if r.status != 200:
                    raise RuntimeError(f"a request failed: {r.status}")


def settle(stack: Stack) -> None:
    """Wait until the store has had no call for ``QUIET_S`` (background writes landed)."""
    deadline = time.monotonic() + SETTLE_DEADLINE_S
    seen = -1
    while time.monotonic() < deadline:
        count = len(stack.store_calls()["calls"])
        if count == seen:
            return
        seen = count
        time.sleep(QUIET_S)
    raise RuntimeError("the store did not go quiet")


def measure(build: Build, requests: int, stream: bool) -> None:
    """One round of one build: its CPU per request and its store calls."""
    stack = build.stack
    assert stack is not None
    settle(stack)
    stack.store_calls(clear=True)
    gateway, store = stack.pid("gateway"), stack.pid("store")
    before = cpu_seconds(gateway), cpu_seconds(store)
    asyncio.run(drive(stack.gateway_url, requests, stream))
    settle(stack)
    after = cpu_seconds(gateway), cpu_seconds(store)
    build.gateway_ms.append(1000 * (after[0] - before[0]) / requests)
    build.store_ms.append(1000 * (after[1] - before[1]) / requests)
    build.calls.update(call[0] for call in stack.store_calls()["calls"])
    build.requests += requests


def start(build: Build) -> None:
    """The build's store, upstreams and gateway, the gateway on the build's own code."""
    tree = build.tree.resolve()
    os.environ["PYTHONPATH"] = f"{tree}/shared:{tree}/infra"
    build.stack = Stack.start(f"alt-{uuid.uuid4().hex[:8]}")


def report(builds: list[Build]) -> str:
    """Median and lowest round per build, and store calls per request."""
    lines = ["build: gateway ms/request (median, min) | store | calls per request"]
    for b in builds:
        calls = " ".join(f"{op}={n / b.requests:.2f}" for op, n in sorted(b.calls.items()))
        lines.append(
            f"{b.name}: {statistics.median(b.gateway_ms):.2f}, {min(b.gateway_ms):.2f}"
            f" | {statistics.median(b.store_ms):.2f}, {min(b.store_ms):.2f} | {calls}"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--build", action="append", required=True, help="NAME=SOURCE_TREE")
    parser.add_argument("--requests", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--stream", action="store_true", help="stream requests instead of JSON")
    args = parser.parse_args(argv)
    builds = [Build(name, Path(tree)) for name, _, tree in (b.partition("=") for b in args.build)]
    try:
        for build in builds:
            start(build)
            assert build.stack is not None
            asyncio.run(drive(build.stack.gateway_url, WARMUP, args.stream))
        for index in range(args.rounds):
            for build in builds if index % 2 == 0 else builds[::-1]:
                measure(build, args.requests, args.stream)
                print(
                    f"round {index} {build.name}: gateway {build.gateway_ms[-1]:.2f} ms"
                    f" store {build.store_ms[-1]:.2f} ms per request",
                    flush=True,
                )
        print(report(builds))
    finally:
        for build in builds:
            if build.stack is not None:
                build.stack.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
