"""The AWS clients' timeouts, attempts, pool sizes and endpoints come from the settings.

``Settings`` is the one place their numbers live (``aws/`` has no defaults):
``clients.store_options`` and ``secrets_options`` build the options, and
``open_store`` hands them, the endpoint and the process's jitter to the client.
Proven on loopback servers that answer with scripted bytes (``test_wire``'s).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import random

import pytest
from botocore.exceptions import ClientError

from edgeproxy.aws.session import DeferredSession
from edgeproxy.aws.wire import ClientOptions
from edgeproxy.clients import open_store, secrets_options, store_endpoint, store_options
from edgeproxy.settings import Settings
from tests.unit.aws.test_wire import JSON_OK, serving

CREDENTIALS = {"AWS_ACCESS_KEY_ID": "AKIDTEST", "AWS_SECRET_ACCESS_KEY": "secret"}
FAILED = b"HTTP/1.1 500 Internal Server Error\r\nContent-Length: 2\r\n\r\n{}"


def test_the_store_options_are_the_settings_numbers() -> None:
    settings = Settings(
        store_timeout_seconds=1.5,
        store_connect_timeout_seconds=0.25,
        store_max_attempts=4,
        aws_max_connections=7,
        aws_keepalive_seconds=12.0,
    )
    assert store_options(settings) == ClientOptions(
        connect_timeout_s=0.25,
        read_timeout_s=1.5,
        max_attempts=4,
        max_open=7,
        max_idle=7,
        keepalive_s=12.0,
    )
    # The connect never outlasts the store's budget (the whole call's).
    assert store_options(Settings(store_timeout_seconds=0.2)).connect_timeout_s == 0.2


def test_the_defaults_are_the_ones_the_clients_had() -> None:
    # Moved from the clients' own defaults to Settings: the same numbers as before.
    assert store_options(Settings()) == ClientOptions(0.5, 2.0, 2, 100, 100, 30.0)
    assert secrets_options(Settings()) == ClientOptions(2.0, 5.0, 3, 100, 100, 30.0)


def test_the_store_endpoint_is_the_configured_one_else_the_regions() -> None:
    assert store_endpoint(Settings(dynamodb_endpoint="http://127.0.0.1:8000")) == (
        "http://127.0.0.1:8000"
    )
    assert (
        store_endpoint(Settings(region="eu-west-1")) == "https://dynamodb.eu-west-1.amazonaws.com"
    )
    assert store_endpoint(Settings(region="cn-north-1")).endswith(".amazonaws.com.cn")


def _settings(url: str, **fields: object) -> Settings:
    return dataclasses.replace(Settings(dynamodb_endpoint=url, environ=CREDENTIALS), **fields)


async def test_open_store_sends_to_the_settings_endpoint_on_their_pool_size() -> None:
    async with (
        serving(lambda n: ([JSON_OK], False)) as server,
        contextlib.AsyncExitStack() as stack,
    ):
        settings = _settings(server.url, aws_max_connections=2)
        session = DeferredSession(CREDENTIALS)
        store = await open_store(settings, stack, session, rng=random.Random(1))
        client = store._table._client  # the bounded DynamoDB client open_store built
        answers = await asyncio.gather(*(client.get_item(TableName="t", Key={}) for _ in range(12)))
    assert answers == [{"ok": True}] * 12
    assert len(server.requests) == 12
    assert server.connections <= 2


@pytest.mark.parametrize("attempts", [1, 3])
async def test_open_store_retries_as_many_times_as_the_settings_say(attempts: int) -> None:
    async with serving(lambda n: ([FAILED], False)) as server, contextlib.AsyncExitStack() as stack:
        settings = _settings(server.url, store_max_attempts=attempts)
        session = DeferredSession(CREDENTIALS)
        store = await open_store(settings, stack, session, rng=random.Random(1))
        with pytest.raises(ClientError):
            await store._table._client.get_item(TableName="t", Key={})
    assert len(server.requests) == attempts
