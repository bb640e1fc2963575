"""Profile requests through the ASGI app in process (cProfile), without an HTTP server.

Run as ``python -m bench.profiling STORE_URL TABLE REQUESTS OUT.json`` (the raw profile
beside it, ``OUT.prof``). It
builds the app as the runner does, warms it up, then profiles ``REQUESTS``
non-stream chat requests one after another. Each call awaits the app to its
end, so the after-response outcome writes (a starlette ``BackgroundTask``)
are inside the profile. uvicorn's own HTTP parsing is not: it is not
edgeproxy's code. The stores and upstreams are the benchmark's own processes.
"""

from __future__ import annotations

import asyncio
import cProfile
import io
import json
import os
import pstats
import sys
import time
from typing import Any

from bench.workloads import chat
from edgeproxy.api.app import create_app
from edgeproxy.runtime import build_gateway
from edgeproxy.service.gateway import Gateway
from edgeproxy_dev.runner import MOCK_KEY, local_session, local_settings

WARMUP = 30
TOP = 25


def _scope(path: str, headers: dict[str, str], length: int) -> dict[str, Any]:
    raw = [(k.lower().encode(), v.encode()) for k, v in headers.items()]
    raw += [(b"host", b"127.0.0.1"), (b"content-length", str(length).encode())]
    return {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "root_path": "",
        "headers": raw,
        "client": ("127.0.0.1", 50000),
        "server": ("127.0.0.1", 8080),
    }


async def _one(app: Any, scope: dict[str, Any], body: bytes) -> int:
    sent = False
    status = 0

    async def receive() -> dict[str, Any]:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        await asyncio.Event().wait()  # the client never disconnects
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        nonlocal status
        if message["type"] == "http.response.start":
            status = int(message["status"])

    await app(scope, receive, send)
    return status


async def profile(
    store_url: str, table: str, requests: int, dump: str | None = None
) -> dict[str, Any]:
    """Warm up, then profile ``requests`` sequential chat requests; the top functions.

    The profiler's clock is the process's CPU time, not the wall clock: on a
    shared machine a function's wall time is mostly other processes' turns.
    ``dump``: also write the raw profile there (``pstats`` reads it).
    """
    os.environ["EDGEPROXY_CRED_MOCK_KEY"] = MOCK_KEY
    settings = local_settings(store_url, table)

    async def factory() -> Gateway:
        return await build_gateway(settings, session=local_session())

    app = create_app(factory)
    call = chat(direct=False)
    body = call.body.encode()
    scope = _scope(call.path, call.headers, len(body))
    for _ in range(WARMUP):
        if await _one(app, scope, body) != 200:
            raise RuntimeError("a warm-up request failed")
    profiler = cProfile.Profile(time.process_time)
    started = time.perf_counter()
    cpu = time.process_time()
    profiler.enable()
    for _ in range(requests):
        if await _one(app, scope, body) != 200:
            raise RuntimeError("a profiled request failed")
    profiler.disable()
    cpu = time.process_time() - cpu
    wall = time.perf_counter() - started
    await app.state.gateway.aclose()
    if dump:
        profiler.dump_stats(dump)
    return {"requests": requests, "wall_s": wall, "cpu_s": cpu, **_top(profiler, requests)}


def _top(profiler: cProfile.Profile, requests: int) -> dict[str, Any]:
    stats = pstats.Stats(profiler, stream=io.StringIO())
    raw: dict[Any, Any] = stats.stats  # type: ignore[attr-defined]
    rows = []
    for (filename, line, name), (_cc, calls, tottime, cumtime, _callers) in raw.items():
        rows.append(
            {
                "function": f"{_short(filename)}:{line}({name})",
                "calls_per_request": calls / requests,
                "self_ms": 1000 * tottime / requests,
                "cumulative_ms": 1000 * cumtime / requests,
            }
        )
    by_self = sorted(rows, key=lambda r: r["self_ms"], reverse=True)[:TOP]
    by_cumulative = sorted(rows, key=lambda r: r["cumulative_ms"], reverse=True)[:TOP]
    packages = {k: 1000 * v / requests for k, v in _by_package(raw).items()}
    return {
        "by_package_ms": dict(sorted(packages.items(), key=lambda kv: -kv[1])),
        "by_self": by_self,
        "by_cumulative": by_cumulative,
    }


def _by_package(raw: dict[Any, Any]) -> dict[str, float]:
    """Self time per package; a C function's time goes to its callers' packages.

    ``select.epoll.poll`` is the event loop waiting for I/O: idle, not cost.
    """
    totals: dict[str, float] = {}
    for (filename, _line, name), (_cc, _calls, tottime, _cum, callers) in raw.items():
        if "epoll" in name:
            totals["(idle: waiting for I/O)"] = totals.get("(idle: waiting for I/O)", 0) + tottime
            continue
        if filename != "~" or not callers:
            owner = _package(filename)
            totals[owner] = totals.get(owner, 0.0) + tottime
            continue
        caller_total = sum(stat[2] for stat in callers.values()) or 1.0
        for (caller_file, _l, _n), stat in callers.items():
            owner = _package(caller_file)
            totals[owner] = totals.get(owner, 0.0) + tottime * stat[2] / caller_total
    return totals


def _package(filename: str) -> str:
    if "site-packages/" in filename:
        return filename.split("site-packages/", 1)[1].split("/", 1)[0].removesuffix(".py")
    if "/shared/edgeproxy/" in filename:
        return "edgeproxy." + filename.split("/shared/edgeproxy/", 1)[1].split("/", 1)[0]
    if "/lib/python3" in filename:
        rest = filename.split("/lib/python3", 1)[1].split("/", 2)
        return "stdlib." + rest[1].removesuffix(".py") if len(rest) > 1 else "stdlib"
    return "other" if filename != "~" else "builtins"


def _short(filename: str) -> str:
    for marker in ("site-packages/", "shared/", "lib/python3"):
        if marker in filename:
            return filename.split(marker, 1)[1]
    return filename


if __name__ == "__main__":
    url, table_name, count, out = sys.argv[1:5]
    result = asyncio.run(profile(url, table_name, int(count), out.removesuffix(".json") + ".prof"))
    with open(out, "w") as handle:
        json.dump(result, handle, indent=1)
