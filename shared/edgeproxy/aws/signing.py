"""``SignatureV4``: AWS Signature Version 4 for the JSON protocol's POSTs (``aws/client.py``).

One signer per service and region: the store's DynamoDB client, and the SSM
and Secrets Manager clients behind credential references. The same signature
botocore's ``SigV4Auth`` computes for these requests
(``tests/unit/aws/test_signing.py`` checks them against it), at a fraction of its
CPU: every request is a ``POST /`` with no query and the same three headers,
so the canonical request is one format string, and the derived signing key is
kept for the day (AWS scopes it to date, region and service).

Credentials come from botocore's credential chain (an aiobotocore credentials
object): frozen once per request, so refreshable ones (a container role,
SSO) are renewed by botocore before they expire; on Lambda they are the
environment's, session token included.
"""

from __future__ import annotations

import hashlib
import hmac
import inspect
import time
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import urlsplit

from botocore.exceptions import NoCredentialsError

ALGORITHM = "AWS4-HMAC-SHA256"
DEFAULT_PORTS = {"http": 80, "https": 443}


def _hmac(key: bytes, message: str) -> bytes:
    return hmac.new(key, message.encode(), hashlib.sha256).digest()


def host_of(url: str) -> str:
    """The ``Host`` header aiohttp (and botocore) send for ``url``: the port only if not default."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if parts.port is not None and parts.port != DEFAULT_PORTS.get(parts.scheme):
        host = f"{host}:{parts.port}"
    return host


class SignatureV4:
    """Signs one service's requests in one region with ``credentials``.

    ``credentials`` may be a coroutine function that finds them (a session's
    ``get_credentials``): called on the first request, as botocore does, so a
    process without credentials fails on its first call, not when it starts.
    """

    def __init__(
        self,
        credentials: Any | Callable[[], Awaitable[Any]],
        region: str,
        service: str,
        endpoint: str,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._credentials = None if callable(credentials) else credentials
        self._find = credentials if callable(credentials) else None
        self._region = region
        self._service = service
        self._host = host_of(endpoint)
        self._clock = clock
        self._key: tuple[str, str, bytes] | None = None  # (date, secret, signing key)

    async def frozen(self) -> Any:
        """The current (access key, secret key, token), refreshed by botocore when due."""
        if self._credentials is None and self._find is not None:
            self._credentials = await self._find()
        if self._credentials is None:
            raise NoCredentialsError()
        frozen = self._credentials.get_frozen_credentials()
        if inspect.isawaitable(frozen):
            frozen = await frozen
        return frozen

    async def headers(self, body: bytes, headers: dict[str, str]) -> dict[str, str]:
        """``X-Amz-Date``, ``X-Amz-Security-Token`` and ``Authorization`` for ``POST /``.

        ``headers``: the request's ``Content-Type`` and ``X-Amz-Target``.
        """
        return self.sign(await self.frozen(), body, headers, self._clock())

    def sign(
        self, credentials: Any, body: bytes, headers: dict[str, str], now: float
    ) -> dict[str, str]:
        stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(now))
        date = stamp[:8]
        extra = {"X-Amz-Date": stamp}
        if credentials.token:
            extra["X-Amz-Security-Token"] = credentials.token
        signed = {k.lower(): " ".join(v.split()) for k, v in {**headers, **extra}.items()}
        signed["host"] = self._host
        names = sorted(signed)
        canonical = "\n".join(
            [
                "POST",
                "/",
                "",
                *(f"{name}:{signed[name]}" for name in names),
                "",
                ";".join(names),
                hashlib.sha256(body).hexdigest(),
            ]
        )
        scope = f"{date}/{self._region}/{self._service}/aws4_request"
        to_sign = "\n".join(
            [ALGORITHM, stamp, scope, hashlib.sha256(canonical.encode()).hexdigest()]
        )
        signature = hmac.new(
            self._signing_key(date, credentials.secret_key), to_sign.encode(), hashlib.sha256
        ).hexdigest()
        extra["Authorization"] = (
            f"{ALGORITHM} Credential={credentials.access_key}/{scope}, "
            f"SignedHeaders={';'.join(names)}, Signature={signature}"
        )
        return extra

    def _signing_key(self, date: str, secret: str) -> bytes:
        if self._key is not None and self._key[0] == date and self._key[1] == secret:
            return self._key[2]
        key = _hmac(f"AWS4{secret}".encode(), date)
        for part in (self._region, self._service, "aws4_request"):
            key = _hmac(key, part)
        self._key = (date, secret, key)
        return key
