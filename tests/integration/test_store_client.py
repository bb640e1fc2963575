"""``DynamoClient`` against a scripted DynamoDB endpoint: retries, error shapes, credentials.

A real HTTP server on loopback answers each call with the next scripted
answer; what the moto server cannot be made to do (throttle, fail with a 5xx,
stall) is scripted here. The store's behaviour on a real DynamoDB-protocol
server is the contract suite's (``test_store_contract*.py``).
"""

from __future__ import annotations

import asyncio
import json
import random
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import aioboto3
import pytest
from aiohttp import web

from edgeproxy.aws.dynamodb import DynamoClient
from edgeproxy.config.deployment import Deployment, ProviderKind
from edgeproxy.errors import StoreError, StoreUnavailable
from edgeproxy.routing.snapshot import BindingKey
from edgeproxy.state import keys
from edgeproxy.state.dynamodb.dynamo import DynamoStore
from edgeproxy.state.dynamodb.schema import TableSchema
from edgeproxy.state.dynamodb.table import BoundedClient
from edgeproxy.state.store import SnapshotRequest
from tests.fixtures.dynamo import open_client

THROTTLED = (400, {"__type": "com.amazonaws.dynamodb.v20120810#ThrottlingException"})
INVALID = (
    400,
    {"__type": "com.amazon.coral.validate#ValidationException", "message": "bad key"},
)
NO_CONFIG = (200, {})
NOW = 1_700_000_000.0
URL = "https://api.example.test/v1"


@dataclass
class Scripted:
    """Answers in order (then ``{}``); records each request's headers and target."""

    answers: list[tuple[int, Any]] = field(default_factory=list)
    seen: list[dict[str, str]] = field(default_factory=list)
    bodies: list[Any] = field(default_factory=list)
    stall_s: float = 0.0
    url: str = ""

    async def handle(self, request: web.Request) -> web.Response:
        self.bodies.append(json.loads(await request.read()))
        self.seen.append(dict(request.headers))
        if self.stall_s:
            await asyncio.sleep(self.stall_s)
        status, body = self.answers.pop(0) if self.answers else NO_CONFIG
        text = body if isinstance(body, str) else json.dumps(body)
        return web.Response(status=status, text=text, content_type="application/x-amz-json-1.0")


@pytest.fixture
async def endpoint() -> AsyncIterator[Scripted]:
    scripted = Scripted()
    app = web.Application()
    app.router.add_post("/", scripted.handle)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    scripted.url = f"http://127.0.0.1:{port}"
    yield scripted
    await runner.cleanup()


@pytest.fixture
def session() -> aioboto3.Session:
    return aioboto3.Session(aws_access_key_id="AKIDTEST", aws_secret_access_key="secret")


async def open_store(
    session: aioboto3.Session, endpoint: Scripted, **options: Any
) -> tuple[DynamoClient, DynamoStore]:
    client = await open_client(session, "us-east-1", endpoint.url, **options)
    schema = TableSchema.from_env_value("pk,sk,expires_at")
    return client, DynamoStore(BoundedClient(client, 2.0), "t", schema, random.Random(0))


async def test_a_throttle_is_retried_once(session: aioboto3.Session, endpoint: Scripted) -> None:
    endpoint.answers = [THROTTLED, (200, {"Item": {"document": {"S": "x"}, "version": {"N": "3"}}})]
    client, store = await open_store(session, endpoint)
    try:
        stored = await store.load_config()
    finally:
        await client.close()
    assert stored is not None
    assert stored.version == 3
    assert len(endpoint.seen) == 2
    assert {h["X-Amz-Target"] for h in endpoint.seen} == {"DynamoDB_20120810.GetItem"}


async def test_a_lasting_throttle_is_store_unavailable(
    session: aioboto3.Session, endpoint: Scripted
) -> None:
    endpoint.answers = [THROTTLED, THROTTLED]
    client, store = await open_store(session, endpoint)
    try:
        with pytest.raises(StoreUnavailable):
            await store.load_config()
    finally:
        await client.close()
    assert len(endpoint.seen) == 2


async def test_a_server_error_without_json_is_store_unavailable(
    session: aioboto3.Session, endpoint: Scripted
) -> None:
    endpoint.answers = [(503, "<html>busy</html>"), (503, "<html>busy</html>")]
    client, store = await open_store(session, endpoint)
    try:
        with pytest.raises(StoreUnavailable):
            await store.load_config()
    finally:
        await client.close()


async def test_a_rejected_request_is_a_store_error_and_not_retried(
    session: aioboto3.Session, endpoint: Scripted
) -> None:
    endpoint.answers = [INVALID]
    client, store = await open_store(session, endpoint)
    try:
        with pytest.raises(StoreError) as caught:
            await store.load_config()
    finally:
        await client.close()
    assert type(caught.value) is StoreError
    assert "ValidationException" in str(caught.value)
    assert len(endpoint.seen) == 1


async def test_a_stalled_answer_is_store_unavailable_within_the_read_timeout(
    session: aioboto3.Session, endpoint: Scripted
) -> None:
    endpoint.stall_s = 10.0
    client, store = await open_store(
        session, endpoint, store_timeout_seconds=0.2, store_max_attempts=1
    )
    loop = asyncio.get_running_loop()
    started = loop.time()
    try:
        with pytest.raises(StoreUnavailable):
            await store.load_config()
    finally:
        await client.close()
    assert loop.time() - started < 5  # the 0.2 s read timeout, not the 10 s stall


async def test_lambda_environment_credentials_sign_with_their_session_token(
    endpoint: Scripted, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "ASIAENVKEY")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "env-secret")
    monkeypatch.setenv("AWS_SESSION_TOKEN", "env-session-token")
    client, store = await open_store(aioboto3.Session(), endpoint)
    try:
        await store.load_config()
    finally:
        await client.close()
    (headers,) = endpoint.seen
    assert headers["X-Amz-Security-Token"] == "env-session-token"
    assert headers["Authorization"].startswith("AWS4-HMAC-SHA256 Credential=ASIAENVKEY/")
    assert "/us-east-1/dynamodb/aws4_request" in headers["Authorization"]
    assert "x-amz-security-token" in headers["Authorization"]


async def test_a_routing_read_asks_only_what_routing_uses_consistently_when_it_reads_a_binding(
    session: aioboto3.Session, endpoint: Scripted
) -> None:
    pool = [
        Deployment(
            id=name,
            model="gpt",
            provider=ProviderKind.OPENAI,
            base_url=URL,
            upstream_model="m",
            **limits,
        )
        for name, limits in (("a", {}), ("b", {"rpm_limit": 5}))
    ]
    shuffled = SnapshotRequest.of("gpt", pool, NOW, counting=set())
    sticky = SnapshotRequest.of("gpt", pool, NOW, BindingKey("c", "gpt", "chat"))
    client, store = await open_store(session, endpoint)
    try:
        await store.read_pool(shuffled)
        await store.read_pool(sticky)
    finally:
        await client.close()

    def asked(body: Any) -> tuple[bool, set[tuple[str, str]]]:
        (table,) = body["RequestItems"].values()
        return table["ConsistentRead"], {(k["pk"]["S"], k["sk"]["S"]) for k in table["Keys"]}

    minute = int(NOW // 60)
    both = {"a", "b"}
    base = {keys.circuit_key(d) for d in both} | {keys.health_key(d) for d in both}
    base |= {keys.capacity_key(d.domain) for d in pool}
    # No binding: the pool's generation decides nothing; weighted_random counts
    # nothing, so only the rpm-limited deployment's current bucket is read.
    assert asked(endpoint.bodies[0]) == (False, base | {keys.usage_key("b", minute)})
    usage = {keys.usage_key(d, m) for d in both for m in (minute - 1, minute)}
    binding = {keys.binding_key(BindingKey("c", "gpt", "chat")), keys.pool_key("gpt")}
    # A binding's read is strongly consistent: the last answer's binding must be seen.
    assert asked(endpoint.bodies[1]) == (True, base | usage | binding)
