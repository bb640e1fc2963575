"""Client CPU per call against an endpoint that answers at once (``bench.stub_store``).

Run as ``python -m bench.calls [--calls N] [--rounds R]``. For each client and
each hot-path call it prints the process CPU time per call (the stub runs in
its own process, so its cost is not counted). Rounds alternate between the
clients, and the table shows the median round: compare within one run only.

    store  aiobotocore   the aioboto3 client the store used before (standard retries)
    store  edgeproxy     ``aws.dynamodb.DynamoClient`` (what the store uses now: ``aws.wire``)
    http   httpx         httpx's own stack (httpcore + h11), as the upstream client was
    http   edgeproxy     ``upstream.client.make_http_client()``: httpx over ``AiohttpTransport``
    http   aiohttp       aiohttp's ClientSession directly (the floor for an HTTP POST)
    http   httpx-aiohttp the ``httpx-aiohttp`` package's transport, if it is installed
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import random
import statistics
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from typing import Any

import aioboto3
import aiohttp
import httpx
from botocore.config import Config

from edgeproxy.aws.dynamodb import DynamoClient
from edgeproxy.clients import store_options
from edgeproxy.settings import Settings
from edgeproxy.state.dynamodb.dynamo import DynamoStore
from edgeproxy.state.dynamodb.schema import TableSchema
from edgeproxy.state.store import SnapshotRequest
from edgeproxy.upstream.client import make_http_client

REGION = "us-east-1"
CREDENTIALS = {"aws_access_key_id": "bench", "aws_secret_access_key": "bench"}
TABLE = "t"
MINUTE = 29_000_000
# What the store's aiobotocore client was built with before ``DynamoClient``.
BOTO_CONFIG = Config(
    connect_timeout=0.5,
    read_timeout=2.0,
    retries={"mode": "standard", "max_attempts": 2},
    tcp_keepalive=True,
)
CHAT = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}

Call = Callable[[], Awaitable[Any]]


def _key(pk: str, sk: str) -> dict[str, Any]:
    return {"pk": {"S": pk}, "sk": {"S": sk}}


def store_calls(client: Any) -> dict[str, Call]:
    """The request path's three kinds of DynamoDB call, as ``DynamoStore`` sends them."""
    keys = [_key(f"usage#d{i}", f"minute#{MINUTE}") for i in range(12)]
    schema = TableSchema.from_env_value("pk,sk,expires_at")
    store = DynamoStore(client, TABLE, schema, random.Random(0))
    request = SnapshotRequest("p", ["d1", "d2", "d3"], ["a"], MINUTE)
    return {
        "BatchGetItem(12)": lambda: client.batch_get_item(
            RequestItems={TABLE: {"Keys": keys, "ConsistentRead": True}}
        ),
        "UpdateItem ADD if": lambda: client.update_item(
            TableName=TABLE,
            Key=keys[0],
            UpdateExpression="ADD #c0 :c0, #c1 :c1 SET #ttl = :ttl",
            ConditionExpression="attribute_not_exists(#requests) OR #requests < :limit",
            ExpressionAttributeNames={
                "#c0": "requests",
                "#c1": "inflight",
                "#ttl": "expires_at",
                "#requests": "requests",
            },
            ExpressionAttributeValues={
                ":c0": {"N": "1"},
                ":c1": {"N": "1"},
                ":ttl": {"N": "1700003600"},
                ":limit": {"N": "100"},
            },
        ),
        "PutItem if": lambda: client.put_item(
            TableName=TABLE,
            Item={**keys[0], "version": {"N": "2"}, "state": {"S": "open"}},
            ConditionExpression="#version = :expected",
            ExpressionAttributeNames={"#version": "version"},
            ExpressionAttributeValues={":expected": {"N": "1"}},
            ReturnValuesOnConditionCheckFailure="ALL_OLD",
        ),
        "store.read_pool": lambda: store.read_pool(request),
        "store.admit": lambda: store.admit("d1", MINUTE, 100, 1700003600.0),
    }


async def cpu_per_call(call: Call, count: int) -> float:
    """Milliseconds of this process's CPU per call, over ``count`` sequential calls."""
    for _ in range(max(3, count // 10)):  # warm: connections, caches
        await call()
    started = time.process_time()
    for _ in range(count):
        await call()
    return (time.process_time() - started) * 1000 / count


async def clients(port: int, stack: contextlib.AsyncExitStack) -> dict[str, dict[str, Call]]:
    """Each client's calls against the stub on ``port``."""
    endpoint = f"http://127.0.0.1:{port}"
    session = aioboto3.Session(region_name=REGION, **CREDENTIALS)
    boto = await stack.enter_async_context(
        session.client("dynamodb", endpoint_url=endpoint, config=BOTO_CONFIG, region_name=REGION)
    )
    settings = Settings(region=REGION)
    ours = await DynamoClient.open(
        session, REGION, endpoint, store_options(settings), random.Random(0).random
    )
    stack.push_async_callback(ours.close)
    chat_url = f"{endpoint}/v1/chat/completions"
    httpx_client = httpx.AsyncClient(trust_env=False)
    stack.push_async_callback(httpx_client.aclose)
    upstream = make_http_client()
    stack.push_async_callback(upstream.aclose)
    aio = aiohttp.ClientSession()
    stack.push_async_callback(aio.close)

    async def aiohttp_post() -> Any:
        async with aio.post(chat_url, json=CHAT) as response:
            return await response.read()

    found: dict[str, dict[str, Call]] = {
        "store aiobotocore": store_calls(boto),
        "store edgeproxy": store_calls(ours),
        "http httpx": {"POST": lambda: httpx_client.post(chat_url, json=CHAT)},
        "http edgeproxy": {"POST": lambda: upstream.post(chat_url, json=CHAT)},
        "http aiohttp": {"POST": aiohttp_post},
    }
    with contextlib.suppress(ImportError):
        from httpx_aiohttp import AiohttpTransport  # type: ignore[import-not-found]

        over = httpx.AsyncClient(transport=AiohttpTransport())
        stack.push_async_callback(over.aclose)
        found["http httpx-aiohttp"] = {"POST": lambda: over.post(chat_url, json=CHAT)}
    return found


async def measure(port: int, count: int, rounds: int) -> dict[tuple[str, str], list[float]]:
    figures: dict[tuple[str, str], list[float]] = {}
    async with contextlib.AsyncExitStack() as stack:
        table = await clients(port, stack)
        for _ in range(rounds):
            for client, calls in table.items():
                for name, call in calls.items():
                    figures.setdefault((client, name), []).append(await cpu_per_call(call, count))
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--uvloop", action="store_true", help="run the clients on uvloop")
    args = parser.parse_args()
    stub = subprocess.Popen(
        [sys.executable, "-m", "bench.stub_store"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert stub.stdout is not None
        port = int(stub.stdout.readline().split()[-1])
        if args.uvloop:
            import uvloop

            figures = uvloop.run(measure(port, args.calls, args.rounds))
        else:
            figures = asyncio.run(measure(port, args.calls, args.rounds))
    finally:
        assert stub.stdin is not None
        stub.stdin.close()
        stub.wait(timeout=10)
    print(f"{'client':<20} {'call':<20} {'CPU ms/call (median round)':>28}")
    for (client, name), values in figures.items():
        print(f"{client:<20} {name:<20} {statistics.median(values):>28.3f}")


if __name__ == "__main__":
    main()
