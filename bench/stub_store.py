"""A DynamoDB endpoint that answers at once, in its own process: the client's cost alone.

Run as ``python -m bench.stub_store``: prints ``stub on PORT`` once it listens,
then serves until stdin closes. Every ``POST /`` gets a canned answer for its
``X-Amz-Target`` (a BatchGetItem returns ``ITEMS`` items of realistic size);
``POST /v1/...`` gets a small chat completion, so the same process stands in
for an instant upstream. Keep-alive throughout, unlike werkzeug.
"""

from __future__ import annotations

import asyncio
import json
import sys

from aiohttp import web

ITEMS = 12  # a pool of 3 deployments: circuits, health, two usage buckets, pool item...
TARGET_PREFIX = "DynamoDB_20120810."


def _item(i: int) -> dict[str, object]:
    return {
        "pk": {"S": f"usage#deployment-{i}"},
        "sk": {"S": "minute#29000000"},
        "requests": {"N": "17"},
        "inflight": {"N": "1"},
        "successes": {"N": "15"},
        "tokens": {"N": "12345"},
        "expires_at": {"N": "1700003600"},
    }


ANSWERS: dict[str, bytes] = {
    "BatchGetItem": json.dumps(
        {"Responses": {"t": [_item(i) for i in range(ITEMS)]}, "UnprocessedKeys": {}}
    ).encode(),
    "UpdateItem": b"{}",
    "PutItem": b"{}",
    "GetItem": json.dumps({"Item": _item(0)}).encode(),
}
CHAT = json.dumps(
    {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1,
        "model": "m",
        "choices": [
            {"index": 0, "message": {"role": "assistant", "content": "hi"}, "finish_reason": "stop"}
        ],
        "usage": {"prompt_tokens": 3, "completion_tokens": 1, "total_tokens": 4},
    }
).encode()


async def dynamo(request: web.Request) -> web.Response:
    await request.read()
    operation = request.headers.get("X-Amz-Target", "").removeprefix(TARGET_PREFIX)
    return web.Response(
        body=ANSWERS.get(operation, b"{}"), content_type="application/x-amz-json-1.0"
    )


async def chat(request: web.Request) -> web.Response:
    await request.read()
    return web.Response(body=CHAT, content_type="application/json")


async def serve() -> None:
    app = web.Application()
    app.router.add_post("/", dynamo)
    app.router.add_post("/v1/{tail:.*}", chat)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    print(f"stub on {port}", flush=True)
    await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)
    await runner.cleanup()


if __name__ == "__main__":
    asyncio.run(serve())
