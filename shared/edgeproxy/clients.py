"""The store and the credential resolver a process opens: what every entry point needs.

Apart from ``runtime.py`` (which wires the whole request path over them) so that a
scheduled job or a CLI command opening only the store imports neither the service
nor the upstream HTTP client (aiohttp).
"""

from __future__ import annotations

import contextlib
from typing import Any

from edgeproxy.aws.dynamodb import DynamoClient
from edgeproxy.aws.secrets import AwsSecrets, lean_opener
from edgeproxy.aws.session import DeferredSession
from edgeproxy.service.credentials import CredentialResolver
from edgeproxy.settings import Settings
from edgeproxy.state.dynamodb.dynamo import DynamoStore
from edgeproxy.state.dynamodb.schema import TableSchema
from edgeproxy.state.dynamodb.table import BoundedClient, CallTimer


async def open_store(
    settings: Settings,
    stack: contextlib.AsyncExitStack,
    session: Any | None = None,
    timed: CallTimer | None = None,
) -> DynamoStore:
    """A ``DynamoStore`` on the configured endpoint (AWS by default credentials otherwise).

    Its client is ``DynamoClient`` (DynamoDB's JSON protocol on ``aws/wire.py``'s
    connections). A store outage must fail fast: botocore's defaults (60 s connect and read
    timeouts, up to 10 attempts) made a request wait over a minute for a
    black-holed store. Here: a short connect timeout, reads bounded by the
    budget, one retry after a jittered backoff (a throttle, a 5xx or a dropped
    connection), and ``BoundedClient`` ends any call, retries included, after
    the budget (``EDGEPROXY_STORE_TIMEOUT_SECONDS``). ``timed``: told each call's duration.
    """
    session = session or DeferredSession()
    budget = settings.store_timeout_seconds
    client = await DynamoClient.open(
        session,
        settings.region,
        settings.dynamodb_endpoint or None,
        connect_timeout_s=min(0.5, budget),
        read_timeout_s=budget,
        max_attempts=2,
    )
    stack.push_async_callback(client.close)
    schema = TableSchema.from_env_value(settings.table_schema)
    return DynamoStore(BoundedClient(client, budget, timed), settings.table, schema)


def open_credentials(
    settings: Settings, stack: contextlib.AsyncExitStack, session: Any
) -> CredentialResolver:
    """A resolver for ``env:``, ``ssm:`` and ``secretsmanager:`` references (clients on first use).

    The clients are ``aws/secrets.py``'s lean ones (AWS's JSON protocol on
    ``aws/wire.py``: no aioboto3 import); botocore's where it alone knows the endpoint.
    """

    def botocore_client(service: str) -> Any:  # on first use: a deferred session stays so
        return session.client(service, region_name=settings.region)

    opener = lean_opener(session, settings.region, settings.environ, botocore_client)
    secrets = AwsSecrets(opener, stack)
    return CredentialResolver(
        settings.environ,
        ssm=secrets.parameter,
        secretsmanager=secrets.secret,
        bootstrap_ref=settings.admin_key_ref,
    )
