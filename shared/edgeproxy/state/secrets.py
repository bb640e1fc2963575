"""``AwsSecrets``: the SSM parameters and Secrets Manager secrets behind credential references.

It lives in ``state/`` because that is where the project's AWS clients are:
every botocore error enters the exception tree in this room, DynamoDB's in
``table.py`` and these here (``translated_errors``), as ``CredentialError``
with a fixed text that names the reference and never a value.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from edgeproxy.errors import CredentialError

# Opens an aiobotocore client for a service name (``session.client`` with its region bound).
ClientOpener = Callable[[str], AbstractAsyncContextManager[Any]]

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
