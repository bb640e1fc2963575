"""One Lambda cold start, in a fresh interpreter: ``python -m bench.lambda_child OUT.json``.

Imports ``functions/proxy/app.py`` (which builds the handler), serves
``events/chat.json`` (its first event builds the clients and reads the
configuration), then a few warm events; writes the timings (monotonic
seconds) and the process's memory to OUT.json. The environment (table,
endpoint, credentials) comes from the harness. Like Lambda, one thread owns
the event loop for every invocation.
"""

from __future__ import annotations

import time

STARTED = time.monotonic()  # before any import of note

import asyncio  # noqa: E402
import importlib.util  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import sys  # noqa: E402
import urllib.request  # noqa: E402
from collections import Counter  # noqa: E402
from dataclasses import dataclass  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
WARM_EVENTS = 20


@dataclass
class Context:
    """The parts of a Lambda context object Powertools reads."""

    function_name: str = "edgeproxy-bench"
    memory_limit_in_mb: int = 512
    invoked_function_arn: str = "arn:aws:lambda:us-east-1:123456789012:function:edgeproxy-bench"
    aws_request_id: str = "00000000-0000-0000-0000-000000000000"


def _memory() -> dict[str, float]:
    out = {}
    for line in Path("/proc/self/status").read_text().splitlines():
        name, _, value = line.partition(":")
        if name in ("VmRSS", "VmHWM"):
            out[name] = int(value.split()[0]) / 1024
    return out


def _store_calls(method: str) -> list[list[Any]]:
    """The bench store's call log (``DELETE`` clears it)."""
    url = os.environ["EDGEPROXY_DYNAMODB_ENDPOINT"] + "/_bench/calls"
    request = urllib.request.Request(url, method=method)  # noqa: S310 - loopback http://
    with urllib.request.urlopen(request, timeout=10) as answer:  # noqa: S310
        calls: list[list[Any]] = json.load(answer)["calls"]
    return calls


def _per_event(calls: list[list[Any]]) -> dict[str, float]:
    """Store calls per warm event, by operation: every one ran inside its invocation
    (Mangum returns after the response's background writes)."""
    ops = Counter(operation for operation, _arrived, _finished in calls)
    out = {op: n / WARM_EVENTS for op, n in sorted(ops.items())}
    out["total"] = sum(ops.values()) / WARM_EVENTS
    return out


def main(out_path: str, client_key: str) -> None:
    """Time import, first event and warm events; write them to ``out_path``."""
    asyncio.set_event_loop(asyncio.new_event_loop())
    spec = importlib.util.spec_from_file_location("proxy_app", ROOT / "functions/proxy/app.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    imported = time.monotonic()
    memory_after_import = _memory()
    event: dict[str, Any] = json.loads((ROOT / "events/chat.json").read_text())
    event["headers"]["authorization"] = f"Bearer {client_key}"
    answer = module.handler(event, Context())
    first = time.monotonic()
    if answer.get("statusCode") != 200:
        raise SystemExit(f"the first event answered {answer.get('statusCode')}: {answer}")
    _store_calls("DELETE")  # from here on, the warm events' calls only
    warm = []
    for _ in range(WARM_EVENTS):
        started = time.monotonic()
        answer = module.handler(event, Context())
        warm.append(time.monotonic() - started)
        if answer.get("statusCode") != 200:
            raise SystemExit(f"a warm event answered {answer.get('statusCode')}")
    result = {
        "started": STARTED,
        "imported": imported,
        "first_event_done": first,
        "warm_event_s": sorted(warm)[len(warm) // 2],
        "memory_after_import_mib": memory_after_import,
        "memory_after_events_mib": _memory(),
        "modules": len(sys.modules),
        "warm_store_calls": _per_event(_store_calls("GET")),
    }
    module.handler.close()
    Path(out_path).write_text(json.dumps(result))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
