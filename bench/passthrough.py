"""The floor: a bare Starlette pass-through proxy on httpx, under the gateway's uvicorn settings.

Run as ``python -m bench.passthrough UPSTREAM_URL``: prints ``passthrough on
URL`` and forwards every POST (path, body, ``Authorization`` and
``Content-Type``) to ``UPSTREAM_URL``, streaming the answer back. No auth, no
routing, no state: what any Python proxy on the same HTTP client (httpx, as
edgeproxy's upstream client) and the same server costs at the least.
"""

from __future__ import annotations

import socket
import sys

import httpx
import uvicorn
from starlette.applications import Starlette
from starlette.background import BackgroundTask
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

from edgeproxy_dev.serving import server_config

FORWARDED = ("authorization", "content-type")


def create_app(upstream: str) -> Starlette:
    """The pass-through app: one pooled ``httpx.AsyncClient`` to ``upstream``."""
    client = httpx.AsyncClient(
        base_url=upstream, timeout=30, limits=httpx.Limits(max_keepalive_connections=64)
    )

    async def forward(request: Request) -> Response:
        headers = {k: v for k, v in request.headers.items() if k in FORWARDED}
        sent = client.build_request(
            "POST", request.url.path, content=await request.body(), headers=headers
        )
        answer = await client.send(sent, stream=True)
        kept = {k: v for k, v in answer.headers.items() if k == "content-type"}
        if not kept.get("content-type", "").startswith("text/event-stream"):
            body = await answer.aread()
            await answer.aclose()
            return Response(body, status_code=answer.status_code, headers=kept)
        return StreamingResponse(
            answer.aiter_raw(),
            status_code=answer.status_code,
            headers=kept,
            background=BackgroundTask(answer.aclose),
        )

    return Starlette(routes=[Route("/{path:path}", forward, methods=["POST"])])


def main(argv: list[str]) -> None:
    """Serve the pass-through on a free loopback port until interrupted."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)
    print(f"passthrough on http://127.0.0.1:{sock.getsockname()[1]}", flush=True)
    config = server_config(create_app(argv[0]), log_level="warning")
    uvicorn.Server(config).run(sockets=[sock])


if __name__ == "__main__":
    main(sys.argv[1:])
