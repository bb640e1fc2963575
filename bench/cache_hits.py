"""The response cache: a hit's latency and store calls beside a miss's and an uncached call's.

    .venv/bin/python -m bench.cache_hits             # 10 s a case
    .venv/bin/python -m bench.cache_hits --seconds 3

One gateway on the embedded store (``Stack``, as ``make run`` runs it), one
connection, requests one at a time, three cases in alternating rounds:

- ``uncached``: the plain pool (``fast-chat``), no cache rule;
- ``miss``: the cached pool (``fast-chat-cached``, scope ``gateway``), every
  request a new prompt: the lookup, the upstream call and the answer's store;
- ``hit``: the cached pool, one prompt stored before the case: the lookup and
  the replay, no upstream call.

For each: p50 and p99 latency, and the store calls per request (the
DynamoDB operations the embedded store logged, the request log's included).
The target: a hit costs no more than one store read beyond the admission and
the log, and never calls the upstream (the mock's port sees no request).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.client import Connection  # noqa: E402
from bench.harness import _sample_stats  # noqa: E402
from bench.processes import Stack  # noqa: E402
from bench.workloads import CACHED_MODEL, CHAT_MODEL, CLIENT_KEY, PROMPT, Call  # noqa: E402

CASES = ("uncached", "miss", "hit")


def call(model: str, prompt: str) -> Call:
    body = {"model": model, "messages": [{"role": "user", "content": prompt}]}
    return Call("/v1/chat/completions", json.dumps(body), CLIENT_KEY)


def calls_of(case: str) -> Any:
    """The requests of ``case``, one after another (see the module doc)."""
    while True:
        if case == "uncached":
            yield call(CHAT_MODEL, PROMPT)
        elif case == "miss":
            yield call(CACHED_MODEL, f"{PROMPT} ({uuid.uuid4().hex})")
        else:
            yield call(CACHED_MODEL, PROMPT)


async def measure(url: str, case: str, seconds: float) -> list[Any]:
    conn = Connection(url)
    samples = []
    try:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + seconds
        for request in calls_of(case):
            samples.append(await conn.request(request))
            if loop.time() > deadline:
                break
            await asyncio.sleep(0.005)  # room for the writes after an answer
    finally:
        await conn.close()
    return samples


def run(seconds: float, rounds: int) -> dict[str, Any]:
    stack = Stack.start(f"bench-cache-{uuid.uuid4().hex[:8]}")
    try:
        asyncio.run(measure(stack.gateway_url, "hit", 1.0))  # warm, and store the hit's answer
        asyncio.run(measure(stack.gateway_url, "uncached", 1.0))
        out: dict[str, Any] = {c: {"samples": [], "ops": Counter(), "requests": 0} for c in CASES}
        for index in range(rounds):
            order = CASES[index % len(CASES) :] + CASES[: index % len(CASES)]
            for case in order:
                stack.store_calls(clear=True)
                samples = asyncio.run(measure(stack.gateway_url, case, seconds / rounds))
                log = stack.store_calls(clear=True)
                out[case]["samples"] += samples
                out[case]["requests"] += len(samples)
                out[case]["ops"].update(op for op, *_ in log["calls"])
        report = {}
        for case, data in out.items():
            stats = _sample_stats(data["samples"], seconds, False)
            n = max(1, data["requests"])
            report[case] = {
                "requests": data["requests"],
                "p50_ms": round(stats["p50"], 2),
                "p99_ms": round(stats["p99"], 2),
                "store_calls_per_request": round(sum(data["ops"].values()) / n, 2),
                "ops_per_request": {op: round(k / n, 2) for op, k in sorted(data["ops"].items())},
            }
        return report
    finally:
        stack.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=10.0, help="per case, over all rounds")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    print(json.dumps(run(args.seconds, args.rounds), indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
