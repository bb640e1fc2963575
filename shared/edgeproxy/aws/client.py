"""``JsonClient``: AWS's JSON protocol over ``aws/wire.py``'s connections, signed with SigV4, for any JSON service.

The services the gateway calls all speak it: DynamoDB (the store,
``aws/dynamodb.py``), SSM and Secrets Manager (credential references,
``aws/secrets.py``). A call is ``POST /`` with the operation in
``X-Amz-Target`` (the service's target prefix and the operation's name), the
request as JSON in the service's content type, and a SigV4 signature scoped to
the service's signing name (``Protocol``). The client answers
``await client.get_parameter(Name=...)`` with the parsed JSON and fails with
botocore's exceptions (``ClientError`` carrying the error code and the rest of
the error body; ``EndpointConnectionError``, ``ReadTimeoutError``...), so the
callers' error translation is the same as for aiobotocore's clients. What it
leaves out is what costs CPU on every call, and imports, in aiobotocore's
generic stack: parameter validation, serialization and parsing through the
service model, the event hooks, endpoint resolution; and, for the first call
of a cold start, importing aioboto3, aiobotocore and botocore's session.

Signing is ``aws/signing.py``'s SigV4 with the session's credentials: an
``aws.session.DeferredSession`` answers with the environment's keys (Lambda's,
session token included) when botocore's chain would stop there, and otherwise
falls back to botocore's chain (a container credentials endpoint as SnapStart
uses, a profile), importing aioboto3 then. Retries: like botocore's standard
mode with ``max_attempts``, a throttle, a 5xx or a dropped connection is tried
again after a short jittered backoff.

Where a client sends its calls is ``aws/endpoints.py``'s (the caller passes the URL).

    >>> client = await JsonClient.open_for(SSM, session, "eu-west-1", url, options, rng.random)  # doctest: +SKIP
    >>> await client.get_parameter(Name="/edgeproxy/admin-key", WithDecryption=True)  # doctest: +SKIP
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from typing import Any, NamedTuple, TypeVar

from botocore.exceptions import (
    ClientError,
    ConnectionClosedError,
    ConnectTimeoutError,
    EndpointConnectionError,
    ReadTimeoutError,
)

from edgeproxy.aws.signing import SignatureV4
from edgeproxy.aws.wire import ClientOptions, Wire

RETRY_BASE_S = 0.025  # first retry after up to 25 ms, then doubling (jittered)
# Sees each answer's operation and parsed body (errors too) before the caller does:
# how tests observe and count calls.
CallHook = Callable[[str, dict[str, Any]], None]
Client = TypeVar("Client", bound="JsonClient")


class Protocol(NamedTuple):
    """What differs between two JSON services on the wire."""

    signing_name: str  # SigV4's service, and the first label of the default host
    target_prefix: str  # X-Amz-Target is this and the operation's name
    content_type: str  # application/x-amz-json-1.0 or -1.1
    endpoint_variable: str  # AWS_ENDPOINT_URL_<this>: botocore's service id, upper snake case
    retry_codes: frozenset[str]  # error codes tried again (besides any 5xx)


def operation_name(method: str) -> str:
    """``batch_get_item`` -> ``BatchGetItem`` (botocore's method names, the services' targets)."""
    return "".join(part.capitalize() for part in method.split("_"))


class JsonClient:
    """One service's calls as ``await client.<snake_case_operation>(**request) -> dict``."""

    def __init__(
        self,
        http: Wire,
        endpoint: str,
        signer: SignatureV4,
        protocol: Protocol,
        *,
        max_attempts: int,
        jitter: Callable[[], float],
    ) -> None:
        """``jitter``: a draw in [0, 1) that spreads the retries (load spreading, not
        security): the process's generator's, passed down from its composition root."""
        self._http = http
        self._endpoint = endpoint
        self._signer = signer
        self._content_type = protocol.content_type
        self._target_prefix = protocol.target_prefix
        self._retry_codes = protocol.retry_codes
        self._attempts = max(1, max_attempts)
        self._jitter = jitter
        self._methods: dict[str, Callable[..., Awaitable[dict[str, Any]]]] = {}
        self.hooks: list[CallHook] = []

    @classmethod
    async def open_for(
        cls: type[Client],
        protocol: Protocol,
        session: Any,
        region: str,
        endpoint: str,
        options: ClientOptions,
        jitter: Callable[[], float],
    ) -> Client:
        """A client on ``endpoint``, signed with ``session``'s credentials (found on first call).

        ``session``: an aioboto3 session or a ``DeferredSession``; ``options``: its
        timeouts, attempts and pool sizes (the process's settings); ``jitter``: as above.
        """
        http = Wire(endpoint, options)
        signer = SignatureV4(session.get_credentials, region, protocol.signing_name, endpoint)
        return cls(
            http, endpoint, signer, protocol, max_attempts=options.max_attempts, jitter=jitter
        )

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
                retry = code in self._retry_codes or status >= 500
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
            await asyncio.sleep(self._jitter() * RETRY_BASE_S * 2**attempt)
        raise AssertionError("unreachable: the last attempt returns or raises")

    async def _send(self, operation: str, body: bytes) -> dict[str, Any]:
        headers = {
            "Content-Type": self._content_type,
            "X-Amz-Target": self._target_prefix + operation,
        }
        headers.update(await self._signer.headers(body, headers))
        status, raw = await self._http.post(headers, body)
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
    """botocore's shape of an error: ``Error`` (code, message) beside the rest of the body.

    The code is ``__type`` as botocore reads it: namespace (``...#``) and any
    ``:``-suffix dropped.
    """
    kind = str(parsed.pop("__type", "") or "").split(":", 1)[0]
    code = kind.rsplit("#", 1)[-1] or ("InternalServerError" if status >= 500 else "Unknown")
    message = str(parsed.pop("message", parsed.pop("Message", "")) or "")
    return {
        **parsed,
        "Error": {"Code": code, "Message": message},
        "ResponseMetadata": {"HTTPStatusCode": status},
    }
