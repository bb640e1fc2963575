"""``DynamoClient``: DynamoDB's JSON protocol over aiohttp, signed with SigV4.

The store's one client, request path and cold paths alike. It answers the
low-level calls ``Table`` makes (``client.batch_get_item(**request)``, ...)
with the same parsed JSON, and fails with the same botocore exceptions
(``ClientError`` carrying the error code and the rest of the error body, such
as the ``Item`` of a failed condition; ``EndpointConnectionError``,
``ReadTimeoutError``...), so ``table.translated_errors`` stays the one place
they become ``StoreError``. What it leaves out is what costs CPU on every
call of aiobotocore's generic stack: parameter validation against the service
model, request serialization and response parsing through the model, the
event hooks, and endpoint resolution. DynamoDB's wire format is already the
shape the store builds (typed attribute values, numbers as strings), so a
request is ``json.dumps`` of the call's arguments.

Signing is botocore's SigV4 (``SignatureV4``, below), with the default
credential chain's credentials (on Lambda, the environment's, session token
included); refreshable credentials are refreshed by botocore as they near
expiry. Retries: like botocore's standard mode with ``max_attempts`` (2), a
throttle, a 5xx or a dropped connection is tried again after a short jittered
backoff; ``BoundedClient`` still caps each call as a whole.

    >>> client = await DynamoClient.open(session, "eu-west-1", endpoint=None)  # doctest: +SKIP
    >>> await client.get_item(TableName="t", Key={...})  # doctest: +SKIP
"""

from __future__ import annotations

import asyncio
import json
import random
import ssl
from collections.abc import Awaitable, Callable
from typing import Any

import aiohttp
import certifi
from botocore.exceptions import (
    ClientError,
    ConnectionClosedError,
    ConnectTimeoutError,
    EndpointConnectionError,
    ReadTimeoutError,
)

from edgeproxy.state.dynamodb.signing import SignatureV4

TARGET_PREFIX = "DynamoDB_20120810."
CONTENT_TYPE = "application/x-amz-json-1.0"
RETRY_CODES = frozenset(
    {
        "ProvisionedThroughputExceededException",
        "RequestLimitExceeded",
        "ThrottlingException",
        "InternalServerError",
        "ServiceUnavailable",
        "TransactionInProgressException",
    }
)
RETRY_BASE_S = 0.025  # first retry after up to 25 ms, then doubling (jittered)

# Sees each answer's operation and parsed body (errors too) before the caller does:
# how tests observe and count calls.
CallHook = Callable[[str, dict[str, Any]], None]


def operation_name(method: str) -> str:
    """``batch_get_item`` -> ``BatchGetItem`` (botocore's method names, DynamoDB's targets)."""
    return "".join(part.capitalize() for part in method.split("_"))


class DynamoClient:
    """DynamoDB calls as ``await client.<snake_case_operation>(**request) -> dict``."""

    def __init__(
        self,
        http: aiohttp.ClientSession,
        endpoint: str,
        signer: SignatureV4,
        *,
        max_attempts: int = 2,
    ) -> None:
        self._http = http
        self._endpoint = endpoint
        self._signer = signer
        self._attempts = max(1, max_attempts)
        self._methods: dict[str, Callable[..., Awaitable[dict[str, Any]]]] = {}
        self.hooks: list[CallHook] = []

    @classmethod
    async def open(
        cls,
        session: Any,
        region: str,
        endpoint: str | None = None,
        *,
        connect_timeout_s: float = 0.5,
        read_timeout_s: float = 2.0,
        max_attempts: int = 2,
    ) -> DynamoClient:
        """A client on ``endpoint`` (default: the region's), signed with ``session``'s credentials.

        ``session``: an aioboto3 session (its credential chain is botocore's).
        """
        suffix = "amazonaws.com.cn" if region.startswith("cn-") else "amazonaws.com"
        url = endpoint or f"https://dynamodb.{region}.{suffix}"
        timeout = aiohttp.ClientTimeout(
            total=None, sock_connect=connect_timeout_s, sock_read=read_timeout_s
        )
        http = aiohttp.ClientSession(
            timeout=timeout,
            connector=aiohttp.TCPConnector(
                keepalive_timeout=30,
                ttl_dns_cache=60,
                # botocore's CA bundle too; none to load for a plain-HTTP local endpoint.
                ssl=ssl.create_default_context(cafile=certifi.where())
                if url.startswith("https:")
                else True,
            ),
            skip_auto_headers=("User-Agent", "Accept", "Accept-Encoding"),
            auto_decompress=False,
        )
        signer = SignatureV4(session.get_credentials, region, "dynamodb", url)
        return cls(http, url, signer, max_attempts=max_attempts)

    async def close(self) -> None:
        await self._http.close()

    def __getattr__(self, method: str) -> Callable[..., Awaitable[dict[str, Any]]]:
        if method.startswith("_"):
            raise AttributeError(method)
        bound = self._methods.get(method)
        if bound is None:
            operation = operation_name(method)

            async def bound(**request: Any) -> dict[str, Any]:
                return await self.call(operation, request)

            self._methods[method] = bound
        return bound

    async def call(self, operation: str, request: dict[str, Any]) -> dict[str, Any]:
        """Send ``operation`` with ``request`` (its JSON body); retried like botocore's standard mode."""
        body = json.dumps(request, separators=(",", ":")).encode()
        for attempt in range(self._attempts):
            try:
                answer = await self._send(operation, body)
            except ClientError as exc:
                code = exc.response["Error"]["Code"]
                status = exc.response["ResponseMetadata"]["HTTPStatusCode"]
                retry = code in RETRY_CODES or status >= 500
                if not retry or attempt + 1 == self._attempts:
                    raise
            except (
                EndpointConnectionError,
                ConnectTimeoutError,
                ConnectionClosedError,
                ReadTimeoutError,
            ):
                if attempt + 1 == self._attempts:
                    raise
            else:
                return answer
            await asyncio.sleep(random.random() * RETRY_BASE_S * 2**attempt)
        raise AssertionError("unreachable: the last attempt returns or raises")

    async def _send(self, operation: str, body: bytes) -> dict[str, Any]:
        headers = {"Content-Type": CONTENT_TYPE, "X-Amz-Target": TARGET_PREFIX + operation}
        headers.update(await self._signer.headers(body, headers))
        url = self._endpoint
        try:
            async with self._http.post(url, data=body, headers=headers) as response:
                status = response.status
                raw = await response.read()
        except aiohttp.ServerTimeoutError as exc:
            if isinstance(exc, aiohttp.ConnectionTimeoutError):
                raise ConnectTimeoutError(endpoint_url=url, error=exc) from exc
            raise ReadTimeoutError(endpoint_url=url, error=exc) from exc
        except aiohttp.ClientConnectorError as exc:
            raise EndpointConnectionError(endpoint_url=url, error=exc) from exc
        except (aiohttp.ClientOSError, aiohttp.ServerDisconnectedError) as exc:
            raise ConnectionClosedError(endpoint_url=url, error=exc) from exc
        except aiohttp.ClientPayloadError as exc:
            raise ConnectionClosedError(endpoint_url=url, error=exc) from exc
        parsed = _parse(raw)
        for hook in self.hooks:
            hook(operation, parsed)
        if status == 200:
            return parsed
        raise ClientError(_error_response(parsed, status), operation)


def _parse(raw: bytes) -> dict[str, Any]:
    if not raw:
        return {}
    try:
        parsed = json.loads(raw)
    except ValueError:
        return {"message": raw[:200].decode(errors="replace")}
    return parsed if isinstance(parsed, dict) else {}


def _error_response(parsed: dict[str, Any], status: int) -> dict[str, Any]:
    """botocore's shape of an error: ``Error`` (code, message) beside the rest of the body."""
    kind = str(parsed.pop("__type", "") or "")
    code = kind.rsplit("#", 1)[-1] or ("InternalServerError" if status >= 500 else "Unknown")
    message = str(parsed.pop("message", parsed.pop("Message", "")) or "")
    return {
        **parsed,
        "Error": {"Code": code, "Message": message},
        "ResponseMetadata": {"HTTPStatusCode": status},
    }
