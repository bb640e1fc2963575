"""``AiohttpTransport``: httpx's client API over aiohttp's connection pool.

The upstream client keeps httpx's interface (requests, responses, streams,
``httpx`` exceptions, so ``upstream.errors`` stays the one place they become
faults); this transport replaces httpx's own HTTP/1.1 stack (httpcore + h11),
which costs about twice aiohttp's CPU per call (``bench/calls.py``).

What it keeps from the httpx client it replaces: HTTP/1.1 only, no proxies
or ``.netrc`` from the environment, no redirects, no cookies kept between
requests (a cookie one caller's upstream set must never reach another's),
no decompression below httpx (``aiter_raw`` stays the wire bytes), each
request's connect and read timeouts, and closing the connection when a
response is closed before its end (an expired deadline aborts the request).
aiohttp's errors are mapped to httpx's by what happened, not by class
hierarchy: a refused or unresolvable host is ``ConnectError``, a connect
timeout ``ConnectTimeout``, a read timeout ``ReadTimeout``, a dropped
connection or a cut body ``ReadError``, a malformed answer
``RemoteProtocolError``.

Why not the ``httpx-aiohttp`` package (0.2.0), which measures the same CPU
per call (``bench/transports.py``): its session can be supplied, which gives
the per-host cap and the cookie and header rules, but its request and its
body stream cannot be, and they break four of the rules above (each held by
a test in ``tests/integration/upstream/test_transport.py``): a drop after
the request was sent becomes ``ConnectTimeout`` (routing would read a
request-shaped reset as "never reached"), a malformed answer escapes as
aiohttp's own exception, a cut stream loses the bytes that came with the
drop, and the URL is re-quoted (``%2F`` in a query sent as ``/``).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager

import aiohttp
import httpx
from aiohttp.abc import AbstractResolver
from aiohttp.resolver import DefaultResolver
from yarl import URL

from edgeproxy.config.egress import EgressSettings
from edgeproxy.tls import verified_context
from edgeproxy.upstream.egress import EGRESS, REFUSED, GuardedResolver, literal_refusal

# One host's share, and the process's ceiling (above the 512 request slots of
# ``edgeproxy_dev.serving``: only the per-host bulkhead is ever the one reached).
MAX_PER_HOST = 100
MAX_CONNECTIONS = 1024


@contextmanager
def _mapped() -> Iterator[None]:
    try:
        yield
    except aiohttp.ConnectionTimeoutError as exc:
        raise httpx.ConnectTimeout("timed out connecting to the upstream") from exc
    except aiohttp.SocketTimeoutError as exc:
        raise httpx.ReadTimeout("timed out reading from the upstream") from exc
    except aiohttp.ServerTimeoutError as exc:
        raise httpx.ReadTimeout("timed out waiting for the upstream") from exc
    except aiohttp.ClientConnectorError as exc:
        raise httpx.ConnectError("could not connect to the upstream") from exc
    except aiohttp.ClientResponseError as exc:  # aiohttp could not parse the answer
        raise httpx.RemoteProtocolError("the upstream's answer is not valid HTTP") from exc
    except (aiohttp.ClientPayloadError, aiohttp.ClientConnectionError) as exc:
        raise httpx.ReadError("the upstream connection dropped") from exc
    except aiohttp.InvalidURL as exc:  # e.g. a non-standard address form (``127.1``)
        raise httpx.ConnectError("the upstream URL is not valid") from exc


def _buffered(content: aiohttp.StreamReader) -> bytes:
    """The bytes received before the error aiohttp set on ``content`` (every public
    reader raises that error first, so its buffer is read with the error set aside)."""
    error = content.exception()
    if error is None:
        return b""
    content._exception = None  # aiohttp has no public way to the buffered bytes
    try:
        return content.read_nowait()
    except RuntimeError:  # another reader is waiting: nothing is ours to take
        return b""
    finally:
        content.set_exception(error)


class _Body(httpx.AsyncByteStream):
    """A response body as it arrives (no buffering: every byte resets an idle timer)."""

    def __init__(self, response: aiohttp.ClientResponse) -> None:
        self._response = response

    async def __aiter__(self) -> AsyncIterator[bytes]:
        content = self._response.content
        with _mapped():
            while True:
                try:
                    chunk = await content.readany()
                except (aiohttp.ClientPayloadError, aiohttp.ClientConnectionError):
                    # aiohttp raises a dropped connection ahead of the bytes that came
                    # with it; a cut stream's last events are part of the answer.
                    rest = _buffered(content)
                    if rest:
                        yield rest
                    raise
                if not chunk:
                    return
                yield chunk

    async def aclose(self) -> None:
        if self._response.content.at_eof():
            self._response.release()  # read to its end: the connection can be reused
        else:
            self._response.close()  # abandoned midway: drop the connection


class AiohttpTransport(httpx.AsyncBaseTransport):
    """One aiohttp session (created on the first request, in the running loop).

    Connections are a bulkhead per upstream host (host, port and scheme, as
    aiohttp keys its pool): at most ``max_per_host`` to one, and
    ``max_connections`` in all, which is set above what the process's request
    slots can use, so one slow upstream holding all of its own connections
    leaves every other host's untouched. A request waiting for a connection
    waits at most its pool timeout (the attempt's deadline).

    A request carrying an ``egress`` extension (``EgressSettings``) is held to
    that rule when it connects: a literal address here, a name in
    ``GuardedResolver`` (``resolver``: the system's by default; a test injects
    its own), resolved anew for every connection.
    """

    def __init__(
        self,
        *,
        max_connections: int = MAX_CONNECTIONS,
        max_per_host: int = MAX_PER_HOST,
        keepalive_expiry_s: float = 20.0,
        resolver: AbstractResolver | None = None,
    ) -> None:
        self._limit = max_connections
        self._per_host = max_per_host
        self._keepalive = keepalive_expiry_s
        self._resolver = resolver
        self._session: aiohttp.ClientSession | None = None

    def _open(self) -> aiohttp.ClientSession:
        connector = aiohttp.TCPConnector(
            limit=self._limit,
            limit_per_host=self._per_host,
            keepalive_timeout=self._keepalive,
            ssl=verified_context(),
            resolver=GuardedResolver(self._resolver or DefaultResolver()),
            use_dns_cache=False,  # every new connection is resolved, and checked, again
        )
        return aiohttp.ClientSession(
            connector=connector,
            cookie_jar=aiohttp.DummyCookieJar(),
            trust_env=False,
            auto_decompress=False,
            skip_auto_headers=("User-Agent", "Accept", "Accept-Encoding", "Content-Type"),
        )

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        if self._session is None:
            self._session = self._open()
        timeout = request.extensions.get("timeout", {})
        egress = request.extensions.get("egress")
        if isinstance(egress, EgressSettings) and literal_refusal(str(request.url), egress):
            raise httpx.ConnectError(REFUSED)
        try:
            url = URL(str(request.url), encoded=True)
            url.port  # noqa: B018 - yarl checks the port only when it is read
        except ValueError:  # a port past 65535 in a document stored before the entry check
            raise httpx.ConnectError("the upstream URL is not valid") from None
        headers = [(k.decode("latin-1"), v.decode("latin-1")) for k, v in request.headers.raw]
        body = await request.aread()
        token = EGRESS.set(egress if isinstance(egress, EgressSettings) else None)
        try:
            with _mapped():
                response = await self._session.request(
                    request.method,
                    url,
                    headers=headers,
                    data=body or None,
                    allow_redirects=False,
                    timeout=aiohttp.ClientTimeout(
                        total=None,
                        connect=timeout.get("pool"),
                        sock_connect=timeout.get("connect"),
                        sock_read=timeout.get("read"),
                    ),
                )
        finally:
            EGRESS.reset(token)
        return httpx.Response(
            status_code=response.status,
            headers=response.raw_headers,
            stream=_Body(response),
            request=request,
            extensions={"http_version": b"HTTP/1.1"},
        )

    async def aclose(self) -> None:
        if self._session is not None:
            await self._session.close()
