"""The response cache on the *built* proxy function: warm CPU and store calls per event.

    .venv/bin/python -m bench.built_cache [--build-dir .aws-sam/build] [--repeats 3]

The built counterpart of ``bench/cache_hits.py`` (which runs the gateway
under uvicorn on the embedded store): each repeat runs, for each case in
turn, one fresh ``python3.12 -I -S -B`` of the built ProxyFunction
(``bench/built_child.py``, as ``bench/built.py`` runs it) that serves
``events/chat.json`` and then ``--events`` warm events:

- ``uncached``: the plain pool (``fast-chat``), no cache rule;
- ``miss``: the cached pool (``fast-chat-cached``, scope ``gateway``), every
  warm event a new prompt (the child's ``vary``): the lookup, the upstream
  call and the answer's store;
- ``hit``: the cached pool, one prompt stored before the stub was armed: the
  lookup and the replay.

Against the bench's instant stub store (armed after every case ran once on
moto, so the hit's answer is there and every read is replayed at once) and
the mock upstream. For each case: the median warm CPU and wall per event
over the fresh processes, the modelled CPU-bound time at each memory size
(``bench.built.shares``), the store calls per warm event (the calls the
store logged between the first warm event and the last one's end) and the
``x-edgeproxy-cache`` answers counted (every ``hit`` event made no upstream
call). Without ``--build-dir`` it runs ``sam build`` first.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # run as a script: make the bench package importable

from bench.built import CHILD, build, shares  # noqa: E402
from bench.child import run_child  # noqa: E402
from bench.coldstart import lambda_env  # noqa: E402
from bench.processes import Stack, put_admin_key  # noqa: E402
from bench.workloads import CACHED_MODEL, CHAT_MODEL, CLIENT_KEY  # noqa: E402

CASES = {"uncached": (CHAT_MODEL, False), "miss": (CACHED_MODEL, True), "hit": (CACHED_MODEL, False)}  # fmt: skip
WARM_EVENTS = 100


def _event(model: str) -> dict[str, Any]:
    event: dict[str, Any] = json.loads((ROOT / "events/chat.json").read_text())
    event["headers"]["authorization"] = f"Bearer {CLIENT_KEY}"
    body = json.loads(event["body"])
    body["model"] = model
    event["body"] = json.dumps(body)
    return event


def one_run(
    stack: Stack, build_dir: Path, table: str, case: str, events: int, work: Path
) -> dict[str, Any]:
    """One fresh process of ``case``; its timings, cache answers and warm store calls."""
    model, vary = CASES[case]
    event_path = work / f"{case}.json"
    event_path.write_text(json.dumps(_event(model)))
    args = [str(event_path), str(events), *(["vary"] if vary else [])]
    stack.store_calls(clear=True)
    _, data = run_child(CHILD, build_dir, "ProxyFunction", args, lambda_env(stack.store_url, table))
    data["warm_ops"] = warm_ops(stack.store_calls(clear=True)["calls"], data)
    return data


def warm_ops(calls: list[list[Any]], data: dict[str, Any]) -> Counter[str]:
    """The operations of ``calls`` (the store's log) that arrived during the warm events."""
    window = (data["warm_started"], data["warm_done"])
    return Counter(op for op, arrived, *_ in calls if window[0] <= arrived <= window[1])


def summary(runs: list[dict[str, Any]], events: int) -> dict[str, Any]:
    """Medians over the fresh processes of one case."""
    ops: Counter[str] = Counter()
    cache: Counter[str] = Counter()
    for run in runs:
        ops.update(run["warm_ops"])
        cache.update(run["cache"])
    n = max(1, events * len(runs))
    warm_cpu = statistics.median(r["warm_cpu_s"] for r in runs)
    return {
        "processes": len(runs),
        "warm_events": n,
        "warm_cpu_ms": round(warm_cpu * 1000, 3),
        "warm_wall_ms": round(statistics.median(r["warm_wall_s"] for r in runs) * 1000, 3),
        "store_calls_per_event": round(sum(ops.values()) / n, 2),
        "ops_per_event": {op: round(k / n, 2) for op, k in sorted(ops.items())},
        "x_edgeproxy_cache": dict(sorted(cache.items())),
        "warm_cpu_ms_at": {
            size: round(v["warm_cpu_ms"], 3) for size, v in shares(0.0, warm_cpu).items()
        },
    }


def measure(build_dir: Path, repeats: int, events: int) -> dict[str, Any]:
    """Every case once on moto (the store sees each read; the hit's answer is stored), then
    ``repeats`` rounds of one fresh process per case, on the armed stub."""
    table = f"bench-{uuid.uuid4().hex[:8]}"
    runs: dict[str, list[dict[str, Any]]] = {case: [] for case in CASES}
    with Stack.start(table, stub=True) as stack, tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        put_admin_key(stack.store_url)  # the ssm: admin key lambda_env names
        for case in CASES:
            one_run(stack, build_dir, table, case, 5, work)
        stack.arm_stub()
        for index in range(repeats):
            order = list(CASES)[index % 3 :] + list(CASES)[: index % 3]
            for case in order:
                runs[case].append(one_run(stack, build_dir, table, case, events, work))
    out = {case: summary(found, events) for case, found in runs.items()}
    uncached = out["uncached"]["warm_cpu_ms"]
    for case in ("miss", "hit"):
        out[case]["warm_cpu_over_uncached"] = round(out[case]["warm_cpu_ms"] / uncached, 3)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0] if __doc__ else None)
    parser.add_argument("--build-dir", type=Path, help="an existing sam build directory")
    parser.add_argument("--repeats", type=int, default=3, help="fresh processes per case")
    parser.add_argument("--events", type=int, default=WARM_EVENTS, help="warm events each")
    plan = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as work:
        build_dir = plan.build_dir or build(Path(work))
        result = measure(build_dir, plan.repeats, plan.events)
    result["load_average"] = list(os.getloadavg())
    print(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
