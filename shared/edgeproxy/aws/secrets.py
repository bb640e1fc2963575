"""``AwsSecrets``: the SSM parameters and Secrets Manager secrets behind credential references.

It lives in ``aws/`` beside the clients it reads with: botocore's errors
enter the exception tree where their client is used, DynamoDB's in
``state/dynamodb/table.py`` and these here (``translated_errors``), as
``CredentialError`` with a fixed text that names the reference and never a
value.

The clients are ``aws.client.JsonClient``s (``lean_opener``): AWS's JSON
protocol on its own connections (``aws/wire.py``), so resolving an ``ssm:``
admin key on a cold start's first request imports no aioboto3, aiobotocore or
botocore session (about 0.3 s of CPU and 80 ms for the client, measured with
aiobotocore). They raise
botocore's exceptions as its clients do, so ``translated_errors`` is the same
for both. Where botocore would pick the endpoint by settings ``aws/endpoints.py``
does not read (``endpoint_url``), the opener falls back to botocore's client.
Credentials are the session's: the environment's keys through
``DeferredSession``, else botocore's chain (a container endpoint, as under
SnapStart), which imports aioboto3 then.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from edgeproxy.aws.client import JsonClient, Protocol
from edgeproxy.aws.endpoints import endpoint_url
from edgeproxy.aws.wire import ClientOptions
from edgeproxy.errors import CredentialError

# Opens a client for a service name (``session.client`` with its region bound, or ``lean_opener``).
ClientOpener = Callable[[str], AbstractAsyncContextManager[Any]]

# botocore's standard mode retries these throttles (and any 5xx) for both services.
THROTTLES = frozenset(
    {"ThrottlingException", "Throttling", "TooManyRequestsException", "RequestLimitExceeded"}
)
SSM = Protocol("ssm", "AmazonSSM.", "application/x-amz-json-1.1", "SSM", THROTTLES)
SECRETS_MANAGER = Protocol(
    "secretsmanager", "secretsmanager.", "application/x-amz-json-1.1", "SECRETS_MANAGER", THROTTLES
)
PROTOCOLS = {"ssm": SSM, "secretsmanager": SECRETS_MANAGER}

# Error codes for "there is no such parameter / secret", from either service.
MISSING_CODES = frozenset(
    {"ParameterNotFound", "ParameterVersionNotFound", "ResourceNotFoundException"}
)
DENIED_CODES = frozenset({"AccessDeniedException", "AccessDenied"})


@asynccontextmanager
async def translated_errors(what: str) -> AsyncIterator[None]:
    """Translate botocore errors into ``CredentialError``, most specific first.

    ``what`` names the reference (``SSM parameter '/x'``). The texts are fixed:
    botocore's own messages may echo the request.
    """
    try:
        yield
    except ClientError as exc:
        code = str(exc.response.get("Error", {}).get("Code", "Unknown"))
        if code in MISSING_CODES:
            raise CredentialError(f"{what} does not exist") from exc
        if code in DENIED_CODES:
            raise CredentialError(f"{what}: access denied") from exc
        raise CredentialError(f"cannot read {what}: {code}") from exc
    except BotoCoreError as exc:
        raise CredentialError(f"cannot read {what}: {type(exc).__name__}") from exc


def lean_opener(
    session: Any,
    region: str,
    environ: Mapping[str, str],
    fallback: ClientOpener,
    options: ClientOptions,
    jitter: Callable[[], float],
) -> ClientOpener:
    """Opens ``JsonClient``s for ``ssm`` and ``secretsmanager``; ``fallback`` (botocore's
    ``session.client``) where ``endpoint_url`` leaves the endpoint to botocore.

    ``options`` (the process's settings: ``clients.secrets_options``) and ``jitter``:
    ``JsonClient.open_for``'s."""

    def open_client(service: str) -> AbstractAsyncContextManager[Any]:
        protocol = PROTOCOLS[service]
        url = endpoint_url(protocol, region, environ)
        if url is None:
            return fallback(service)
        return _opened(JsonClient.open_for(protocol, session, region, url, options, jitter))

    return open_client


@asynccontextmanager
async def _opened(opening: Awaitable[JsonClient]) -> AsyncIterator[Any]:
    client = await opening
    try:
        yield client
    finally:
        await client.close()


class AwsSecrets:
    """Reads SSM parameters and Secrets Manager secrets; every failure is a ``CredentialError``.

    Each client is opened on first use (most deployments never read either
    service) and closed with ``stack``.

    >>> secrets = AwsSecrets(partial(session.client, region_name=region), stack)  # doctest: +SKIP
    >>> # await secrets.parameter("/edgeproxy/openai") -> "sk-..."
    """

    def __init__(self, open_client: ClientOpener, stack: contextlib.AsyncExitStack) -> None:
        self._open = open_client
        self._stack = stack
        self._clients: dict[str, Any] = {}

    async def parameter(self, path: str) -> str:
        """The decrypted value of the SSM parameter ``path``."""
        async with translated_errors(f"SSM parameter {path!r}"):
            client = await self._client("ssm")
            answer = await client.get_parameter(Name=path, WithDecryption=True)
        return str(answer["Parameter"]["Value"])

    async def secret(self, name: str) -> str:
        """The string value of the Secrets Manager secret ``name``."""
        what = f"Secrets Manager secret {name!r}"
        async with translated_errors(what):
            client = await self._client("secretsmanager")
            answer = await client.get_secret_value(SecretId=name)
        value = answer.get("SecretString")
        if value is None:
            raise CredentialError(f"{what} has no string value (binary secrets are not supported)")
        return str(value)

    async def _client(self, service: str) -> Any:
        if service not in self._clients:
            self._clients[service] = await self._stack.enter_async_context(self._open(service))
        return self._clients[service]
