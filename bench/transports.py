"""Client CPU per upstream call for each httpx transport, against a loopback upstream.

Run as ``python -m bench.transports [--calls N] [--rounds R]``. The upstream
runs in its own process (``--serve``), so only the client's CPU is counted.
Each client makes N sequential and N concurrent (32 at a time) calls of two
kinds: a chat completion read whole (JSON) and a 30-event SSE stream read
chunk by chunk. Rounds alternate between the clients (each round starts with the next); the table shows the
median round and each client's ratio to ``edgeproxy``. Compare within one run.

    edgeproxy         ``upstream.client.make_http_client()`` (httpx over ``AiohttpTransport``)
    httpx-aiohttp     the ``httpx-aiohttp`` package's transport, as shipped (if installed)
    httpx             httpx's own stack (httpcore + h11)
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import statistics
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from typing import Any

import httpx
from aiohttp import web

from edgeproxy.upstream.client import make_http_client

CHAT_BODY = {"model": "m", "messages": [{"role": "user", "content": "hi " * 50}]}
EVENTS = 30
CONCURRENCY = 32
ANSWER = json.dumps(
    {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "model": "m",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "hello " * 40}}],
        "usage": {"prompt_tokens": 50, "completion_tokens": 40, "total_tokens": 90},
    }
).encode()
CHUNK = (
    b"data: "
    + json.dumps({"id": "c", "choices": [{"index": 0, "delta": {"content": "tok "}}]}).encode()
    + b"\n\n"
)

Call = Callable[[], Awaitable[Any]]


async def _json(request: web.Request) -> web.Response:
    await request.read()
    return web.Response(body=ANSWER, content_type="application/json")


async def _stream(request: web.Request) -> web.StreamResponse:
    await request.read()
    response = web.StreamResponse(headers={"content-type": "text/event-stream"})
    await response.prepare(request)
    for _ in range(EVENTS):
        await response.write(CHUNK)
        await asyncio.sleep(0)  # one event a write, as a model streams them
    await response.write(b"data: [DONE]\n\n")
    await response.write_eof()
    return response


async def serve() -> None:
    """The upstream: prints ``upstream on PORT``, serves until stdin closes."""
    app = web.Application()
    app.router.add_post("/v1/chat/completions", _json)
    app.router.add_post("/v1/stream", _stream)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0, backlog=1024)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    print(f"upstream on {port}", flush=True)
    await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)
    await runner.cleanup()


def calls(client: httpx.AsyncClient, base: str) -> dict[str, Call]:
    """The two kinds of call, as ``UpstreamClient`` makes them."""

    async def whole() -> Any:
        response = await client.post(f"{base}/v1/chat/completions", json=CHAT_BODY)
        return response.json()

    async def stream() -> int:
        seen = 0
        async with client.stream("POST", f"{base}/v1/stream", json=CHAT_BODY) as response:
            async for chunk in response.aiter_raw():
                seen += len(chunk)
        return seen

    return {"json": whole, "stream": stream}


async def cpu_per_call(call: Call, count: int, concurrent: bool) -> float:
    """Milliseconds of this process's CPU per call, over ``count`` calls."""
    for _ in range(5):  # warm: connections, caches
        await call()
    started = time.process_time()
    if concurrent:
        for _ in range(count // CONCURRENCY):
            await asyncio.gather(*(call() for _ in range(CONCURRENCY)))
        count = count // CONCURRENCY * CONCURRENCY
    else:
        for _ in range(count):
            await call()
    return (time.process_time() - started) * 1000 / count


async def clients(stack: contextlib.AsyncExitStack) -> dict[str, httpx.AsyncClient]:
    """Every client to compare, each closed when ``stack`` is."""
    found = {"edgeproxy": make_http_client()}
    with contextlib.suppress(ImportError):
        from httpx_aiohttp import AiohttpTransport  # type: ignore[import-not-found]

        found["httpx-aiohttp"] = httpx.AsyncClient(transport=AiohttpTransport(), trust_env=False)
    found["httpx"] = httpx.AsyncClient(
        trust_env=False, limits=httpx.Limits(max_connections=100, max_keepalive_connections=100)
    )
    for client in found.values():
        stack.push_async_callback(client.aclose)
    return found


async def measure(port: int, count: int, rounds: int) -> dict[tuple[str, str], list[float]]:
    """CPU ms per call, one value per round, by (client, workload)."""
    base = f"http://127.0.0.1:{port}"
    figures: dict[tuple[str, str], list[float]] = {}
    async with contextlib.AsyncExitStack() as stack:
        table = {name: calls(client, base) for name, client in (await clients(stack)).items()}
        names = list(table)
        for round_ in range(rounds):
            # Each round starts with the next client: none always runs first (or last).
            for name in names[round_ % len(names) :] + names[: round_ % len(names)]:
                kinds = table[name]
                for kind, call in kinds.items():
                    for concurrent in (False, True):
                        load = f"{kind} {'x32' if concurrent else 'seq'}"
                        value = await cpu_per_call(call, count, concurrent)
                        figures.setdefault((name, load), []).append(value)
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=320)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--serve", action="store_true", help="be the upstream (internal)")
    args = parser.parse_args()
    if args.serve:
        asyncio.run(serve())
        return
    upstream = subprocess.Popen(
        [sys.executable, "-m", "bench.transports", "--serve"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert upstream.stdout is not None
        port = int(upstream.stdout.readline().split()[-1])
        figures = asyncio.run(measure(port, args.calls, args.rounds))
    finally:
        assert upstream.stdin is not None
        upstream.stdin.close()
        upstream.wait(timeout=10)
    medians = {key: statistics.median(values) for key, values in figures.items()}
    print(f"{'client':<15} {'workload':<12} {'CPU ms/call':>12} {'vs edgeproxy':>13}")
    for (client, load), value in medians.items():
        ratio = value / medians[("edgeproxy", load)]
        print(f"{client:<15} {load:<12} {value:>12.3f} {ratio:>12.2f}x")


if __name__ == "__main__":
    main()
