"""``Idempotency-Key`` across the fleet, with the stock openai SDK (``extra_headers``).

Two gateway processes share one moto store. The mock upstream numbers its answers
(``chatcmpl-mock-a-<n>``) and logs every call, so "one upstream call" and "the first
call's answer" are read off it. Its answers are held back (``latency_ms``) so that the
retries arrive while the first call is still running.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import random
import socket
import uuid
from collections.abc import Callable
from typing import Any

import aioboto3
import httpx
import openai
import pytest

from edgeproxy.api.idempotent import request_hash
from edgeproxy.routing.idempotency import Lease, LeaseState
from edgeproxy.state.dynamodb.dynamo import DynamoStore
from edgeproxy.state.dynamodb.schema import TableSchema
from edgeproxy_dev.dynamo_server import client_kwargs
from edgeproxy_dev.mock_upstream import MockUpstream
from tests.fixtures.clock import FleetClock
from tests.fixtures.configs import config, deployment
from tests.fixtures.dynamo import open_client
from tests.fixtures.table import wait_for
from tests.integration.resilience.helpers import CLIENT_KEY, HELLO, keys, router

CHAT = "/v1/chat/completions"
PATIENT = {"response_ms": 20_000, "total_ms": 30_000}


def _config(upstream: MockUpstream) -> dict[str, Any]:
    return config(
        deployment("a", upstream),
        router=router(json=PATIENT | {"idle_ms": None}, stream=PATIENT | {"idle_ms": 20_000}),
        gateway=keys(),
    )


def _calls(upstream: MockUpstream) -> list[dict[str, Any]]:
    return [r for r in upstream.requests() if r["path"] == CHAT]


def _key() -> str:
    return f"retry-{uuid.uuid4().hex}"


def test_twenty_concurrent_retries_over_two_processes_make_one_upstream_call(
    spawn_gateway: Callable[..., Any], start_gateway: Callable[..., Any], upstream_a: MockUpstream
) -> None:
    cfg = _config(upstream_a)
    remote = spawn_gateway(cfg)
    local = start_gateway(cfg)
    upstream_a.set_faults([], persistent={"latency_ms": 1500})
    key = _key()

    async def burst() -> list[Any]:
        clients = [
            openai.AsyncOpenAI(base_url=gw.base_url + "/v1", api_key=CLIENT_KEY, max_retries=0)
            for gw in (remote, local)
        ]
        try:
            return list(
                await asyncio.gather(
                    *(
                        clients[i % 2].chat.completions.create(
                            model="fast-chat",
                            messages=HELLO,  # type: ignore[arg-type]
                            extra_headers={"Idempotency-Key": key},
                        )
                        for i in range(20)
                    )
                )
            )
        finally:
            for client in clients:
                await client.close()

    answers = asyncio.run(burst())
    assert len(_calls(upstream_a)) == 1
    first = answers[0].model_dump()
    assert first["id"] == "chatcmpl-mock-a-1"
    assert all(a.model_dump() == first for a in answers)
    assert first["choices"][0]["message"]["content"]


def test_a_retry_after_the_client_dropped_the_first_connection_gets_the_first_answer(
    start_gateway: Callable[..., Any], spawn_gateway: Callable[..., Any], upstream_a: MockUpstream
) -> None:
    cfg = _config(upstream_a)
    first_gw = start_gateway(cfg)
    retry_gw = spawn_gateway(cfg)
    upstream_a.set_faults([{"latency_ms": 1500}])  # the first call stalls in the upstream
    key = _key()
    body = json.dumps({"model": "fast-chat", "messages": HELLO}).encode()
    url = httpx.URL(first_gw.base_url)
    assert url.host
    assert url.port
    head = (
        f"POST {CHAT} HTTP/1.1\r\nHost: {url.host}:{url.port}\r\n"
        f"Authorization: Bearer {CLIENT_KEY}\r\nIdempotency-Key: {key}\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
    ).encode()
    with socket.create_connection((url.host, url.port)) as sock:
        sock.sendall(head + body)
        wait_for(lambda: len(_calls(upstream_a)), lambda n: n == 1, "the first upstream call")
    # The client is gone; the first call goes on (no cancel) and its answer is stored.
    with openai.OpenAI(base_url=retry_gw.base_url + "/v1", api_key=CLIENT_KEY) as client:
        raw = client.chat.completions.with_raw_response.create(
            model="fast-chat", messages=HELLO, extra_headers={"Idempotency-Key": key}
        )
    answer = raw.parse()
    assert answer.id == "chatcmpl-mock-a-1"  # the first call's answer, not a second one
    assert raw.headers["idempotent-replayed"] == "true"
    assert len(_calls(upstream_a)) == 1


def test_the_same_key_with_another_body_is_a_422_naming_the_conflict(
    start_gateway: Callable[..., Any], upstream_a: MockUpstream
) -> None:
    gw = start_gateway(_config(upstream_a))
    key = _key()
    with openai.OpenAI(base_url=gw.base_url + "/v1", api_key=CLIENT_KEY, max_retries=0) as client:
        client.chat.completions.create(
            model="fast-chat", messages=HELLO, extra_headers={"Idempotency-Key": key}
        )
        with pytest.raises(openai.UnprocessableEntityError) as caught:
            client.chat.completions.create(
                model="fast-chat",
                messages=[{"role": "user", "content": "Something else"}],
                extra_headers={"Idempotency-Key": key},
            )
    error = caught.value.body
    assert isinstance(error, dict)
    assert error["code"] == "idempotency_key_reused"
    assert error["param"] == "Idempotency-Key"
    assert "different request body" in error["message"]
    assert len(_calls(upstream_a)) == 1


def test_a_stream_is_replayed_as_the_same_stream(
    start_gateway: Callable[..., Any], upstream_a: MockUpstream
) -> None:
    gw = start_gateway(_config(upstream_a))
    key = _key()

    def streamed(client: openai.OpenAI) -> list[dict[str, Any]]:
        chunks = client.chat.completions.create(
            model="fast-chat",
            messages=HELLO,
            stream=True,
            stream_options={"include_usage": True},
            extra_headers={"Idempotency-Key": key},
        )
        return [c.model_dump() for c in chunks]

    with openai.OpenAI(base_url=gw.base_url + "/v1", api_key=CLIENT_KEY, max_retries=0) as client:
        first = streamed(client)
        again = streamed(client)
    assert len(_calls(upstream_a)) == 1
    assert again == first
    assert first[-1]["usage"]["total_tokens"] > 0
    assert "".join(c["choices"][0]["delta"].get("content") or "" for c in first if c["choices"])


def test_an_error_answer_is_not_stored_a_retry_executes_again(
    start_gateway: Callable[..., Any], upstream_a: MockUpstream
) -> None:
    gw = start_gateway(_config(upstream_a))
    upstream_a.set_faults([{"status": 500}, {"status": 500}, {"status": 500}])
    key = _key()
    with openai.OpenAI(base_url=gw.base_url + "/v1", api_key=CLIENT_KEY, max_retries=0) as client:
        with pytest.raises(openai.InternalServerError):
            client.chat.completions.create(
                model="fast-chat", messages=HELLO, extra_headers={"Idempotency-Key": key}
            )
        failed_calls = len(_calls(upstream_a))
        upstream_a.set_faults([])
        answer = client.chat.completions.create(
            model="fast-chat", messages=HELLO, extra_headers={"Idempotency-Key": key}
        )
    assert len(_calls(upstream_a)) == failed_calls + 1  # executed again, once
    assert answer.choices[0].message.content


async def _on_store(endpoint: str, table: str, schema: TableSchema, work: Any) -> Any:
    """``work(store)`` on a ``DynamoStore`` of the gateways' table (its own client)."""
    options = client_kwargs(endpoint)
    session = aioboto3.Session(
        aws_access_key_id=options["aws_access_key_id"],
        aws_secret_access_key=options["aws_secret_access_key"],
    )
    client = await open_client(session, options["region_name"], endpoint)
    try:
        return await work(DynamoStore(client, table, schema, random.Random(0)))
    finally:
        await client.close()


def test_a_retry_waiting_on_a_dead_owner_is_a_409_then_takes_the_lapsed_lease_over(
    start_gateway: Callable[..., Any],
    upstream_a: MockUpstream,
    clock: FleetClock,
    dynamo_endpoint: str,
    gateway_table: str,
    table_schema: TableSchema,
) -> None:
    short = {"response_ms": 1500, "total_ms": 1500, "idle_ms": None}
    gw = start_gateway(
        config(deployment("a", upstream_a), router=router(json=short), gateway=keys())
    )
    key = _key()
    payload = {"model": "fast-chat", "messages": HELLO}
    scope = "key:" + hashlib.sha256(CLIENT_KEY.encode()).hexdigest()
    # A first call whose process died mid-call: its lease says running for another minute.
    now = clock.now()
    dead = Lease(
        request_hash("openai.chat", payload), "dead", LeaseState.RUNNING, now + 60, now + 86_400
    )

    async def plant(store: DynamoStore) -> bool:
        won, _ = await store.take_lease(scope, key, dead, now)
        return won

    assert asyncio.run(_on_store(dynamo_endpoint, gateway_table, table_schema, plant))
    headers = {"authorization": f"Bearer {CLIENT_KEY}", "idempotency-key": key}
    with httpx.Client(base_url=gw.base_url, timeout=30) as http:
        waited = http.post(CHAT, json=payload, headers=headers)
        assert waited.status_code == 409  # at its own 1.5 s deadline, the lease still held
        assert waited.json()["error"]["code"] == "idempotency_in_progress"
        assert int(waited.headers["retry-after"]) >= 1
        assert _calls(upstream_a) == []
        clock.advance(61)  # the dead owner's lease lapses
        taken = http.post(CHAT, json=payload, headers=headers)
    assert taken.status_code == 200
    assert len(_calls(upstream_a)) == 1

    async def read(store: DynamoStore) -> Lease | None:
        return await store.read_lease(scope, key)

    # Finished just after the answer's last byte went out: read until it lands.
    stored = wait_for(
        lambda: asyncio.run(_on_store(dynamo_endpoint, gateway_table, table_schema, read)),
        lambda lease: lease is not None and lease.state is LeaseState.DONE,
        "the taken-over key finished",
    )
    assert stored is not None
    assert stored.owner != "dead"


@pytest.mark.parametrize("value", ["x" * 256, "caf\u00e9"])
def test_a_malformed_key_is_a_400_naming_the_header(
    start_gateway: Callable[..., Any], upstream_a: MockUpstream, value: str
) -> None:
    gw = start_gateway(_config(upstream_a))
    answer = httpx.post(
        gw.base_url + CHAT,
        json={"model": "fast-chat", "messages": HELLO},
        headers={"authorization": f"Bearer {CLIENT_KEY}", "idempotency-key": value.encode()},
        timeout=30,
    )
    assert answer.status_code == 400
    assert answer.json()["error"]["param"] == "Idempotency-Key"
    assert _calls(upstream_a) == []
