"""uvicorn's server CPU per request: asyncio or uvloop, h11 or httptools.

Run as ``python -m bench.serving [--requests N] [--rounds R]``. Serves a
small Starlette app (one JSON answer, as a proxied completion would be) under
each combination in its own process, sends it N sequential keep-alive POSTs,
and prints the server process's CPU per request (median round; rounds
alternate between the combinations). Compare within one run only.
"""

from __future__ import annotations

import argparse
import asyncio
import socket
import statistics
import subprocess
import sys
import time

import aiohttp

from bench.processes import cpu_seconds

COMBINATIONS = [
    ("asyncio", "h11"),
    ("uvloop", "h11"),
    ("asyncio", "httptools"),
    ("uvloop", "httptools"),
]
BODY = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


def start(loop: str, http: str) -> tuple[subprocess.Popen[bytes], str]:
    port = _free_port()
    server = subprocess.Popen(  # noqa: S603 - fixed arguments
        [
            sys.executable,
            "-m",
            "uvicorn",
            "--factory",
            "bench.serving:app",
            "--port",
            str(port),
            "--loop",
            loop,
            "--http",
            http,
            "--no-access-log",
            "--log-level",
            "warning",
        ]
    )
    url = f"http://127.0.0.1:{port}/v1/chat/completions"
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return server, url
        except OSError:
            time.sleep(0.1)
    server.kill()
    raise RuntimeError(f"uvicorn --loop {loop} --http {http} did not start")


async def drive(url: str, requests: int) -> None:
    async with aiohttp.ClientSession() as session:
        for _ in range(requests):
            async with session.post(url, json=BODY) as response:
                await response.read()


def app() -> object:
    """The served app: parses the JSON body and answers JSON, like a non-streamed relay."""
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import JSONResponse
    from starlette.routing import Route

    async def chat(request: Request) -> JSONResponse:
        body = await request.json()
        return JSONResponse({"id": "c", "model": body["model"], "choices": []})

    return Starlette(routes=[Route("/v1/chat/completions", chat, methods=["POST"])])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    figures: dict[tuple[str, str], list[float]] = {c: [] for c in COMBINATIONS}
    for _ in range(args.rounds):
        for combination in COMBINATIONS:
            server, url = start(*combination)
            try:
                asyncio.run(drive(url, 50))  # warm
                before = cpu_seconds(server.pid)
                asyncio.run(drive(url, args.requests))
                figures[combination].append(
                    1000 * (cpu_seconds(server.pid) - before) / args.requests
                )
            finally:
                server.terminate()
                server.wait(timeout=10)
    print(f"{'loop':<10} {'http':<10} {'server CPU ms/request (median round)':>38}")
    for (loop, http), values in figures.items():
        print(f"{loop:<10} {http:<10} {statistics.median(values):>38.3f}")


if __name__ == "__main__":
    main()
