"""The store and the credential resolver a process opens: what every entry point needs.

Apart from ``runtime.py`` (which wires the whole request path over them) so that a
scheduled job or a CLI command opening only the store imports neither the service
nor the upstream HTTP client (aiohttp).
"""

from __future__ import annotations

import contextlib
import random
import time
from typing import Any

from edgeproxy.aws.dynamodb import DYNAMODB, DynamoClient
from edgeproxy.aws.endpoints import default_endpoint
from edgeproxy.aws.secrets import AwsSecrets, lean_opener
from edgeproxy.aws.session import DeferredSession
from edgeproxy.aws.wire import ClientOptions
from edgeproxy.service.credentials import CredentialResolver
from edgeproxy.settings import Settings
from edgeproxy.state.dynamodb.dynamo import DynamoStore
from edgeproxy.state.dynamodb.schema import TableSchema
from edgeproxy.state.dynamodb.table import BoundedClient, CallTimer


def process_rng() -> random.Random:
    """The process's one generator, seeded from the operating system (load spreading:
    shard picks, retry jitter, weighted draws; not security).

    The one place an unseeded generator is made (``tests/unit/test_clock_sources.py``):
    each composition root (``runtime.build_gateway``, a job, a CLI command) calls it once,
    after any SnapStart restore, and passes it down; nothing below makes its own.
    """
    return random.Random()


def store_options(settings: Settings) -> ClientOptions:
    """The store client's timeouts, attempts and pool sizes, from ``settings``."""
    budget = settings.store_timeout_seconds
    return ClientOptions(
        connect_timeout_s=min(settings.store_connect_timeout_seconds, budget),
        read_timeout_s=budget,
        max_attempts=settings.store_max_attempts,
        max_open=settings.aws_max_connections,
        max_idle=settings.aws_max_connections,
        keepalive_s=settings.aws_keepalive_seconds,
    )


def secrets_options(settings: Settings) -> ClientOptions:
    """The SSM and Secrets Manager clients' timeouts, attempts and pool sizes."""
    return ClientOptions(
        connect_timeout_s=settings.secrets_connect_timeout_seconds,
        read_timeout_s=settings.secrets_read_timeout_seconds,
        max_attempts=settings.secrets_max_attempts,
        max_open=settings.aws_max_connections,
        max_idle=settings.aws_max_connections,
        keepalive_s=settings.aws_keepalive_seconds,
    )


def store_endpoint(settings: Settings) -> str:
    """``EDGEPROXY_DYNAMODB_ENDPOINT`` when set, else the region's DynamoDB endpoint."""
    return settings.dynamodb_endpoint or default_endpoint(DYNAMODB, settings.region)


async def open_store(
    settings: Settings,
    stack: contextlib.AsyncExitStack,
    session: Any | None = None,
    timed: CallTimer | None = None,
    *,
    rng: random.Random,
) -> DynamoStore:
    """A ``DynamoStore`` on the configured endpoint (AWS by default credentials otherwise).

    Its client is ``DynamoClient`` (DynamoDB's JSON protocol on ``aws/wire.py``'s
    connections). A store outage must fail fast: botocore's defaults (60 s connect and read
    timeouts, up to 10 attempts) made a request wait over a minute for a
    black-holed store. Here: a short connect timeout, reads bounded by the
    budget, one retry after a jittered backoff (a throttle, a 5xx or a dropped
    connection), and ``BoundedClient`` ends any call, retries included, after
    the budget (``EDGEPROXY_STORE_TIMEOUT_SECONDS``); the numbers are ``store_options``'.
    ``timed``: told each call's duration. ``rng``: the process's (``process_rng``): the
    client's retry jitter and the store's shard picks.
    """
    session = session or DeferredSession()
    options = store_options(settings)
    endpoint = store_endpoint(settings)
    client = await DynamoClient.open(session, settings.region, endpoint, options, rng.random)
    stack.push_async_callback(client.close)
    schema = TableSchema.from_env_value(settings.table_schema)
    bounded = BoundedClient(client, settings.store_timeout_seconds, timed, time.perf_counter)
    return DynamoStore(bounded, settings.table, schema, rng)


def open_credentials(
    settings: Settings, stack: contextlib.AsyncExitStack, session: Any, rng: random.Random
) -> CredentialResolver:
    """A resolver for ``env:``, ``ssm:`` and ``secretsmanager:`` references (clients on first use).

    The clients are ``aws/secrets.py``'s lean ones (AWS's JSON protocol on
    ``aws/wire.py``: no aioboto3 import); botocore's where it alone knows the endpoint.
    """

    def botocore_client(service: str) -> Any:  # on first use: a deferred session stays so
        return session.client(service, region_name=settings.region)

    opener = lean_opener(
        session,
        settings.region,
        settings.environ,
        botocore_client,
        secrets_options(settings),
        rng.random,
    )
    secrets = AwsSecrets(opener, stack)
    return CredentialResolver(
        settings.environ,
        ssm=secrets.parameter,
        secretsmanager=secrets.secret,
        bootstrap_ref=settings.admin_key_ref,
    )
