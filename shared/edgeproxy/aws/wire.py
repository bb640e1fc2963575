"""``Wire``: kept-alive HTTP/1.1 connections to one AWS endpoint, for ``POST /`` and its answer.

The JSON services (``aws/client.py``) need one exchange: a small signed
POST, then a status and a JSON body. A general HTTP client's request path
(URL objects, cookie jars, header multidicts, tracing signals, payload
writers) costs about 0.14 ms of CPU per call over the exchange itself, and a
warm Lambda invocation makes five store calls. This is the exchange alone, on
asyncio's transports (TLS through the loop, with the process's one context,
``edgeproxy/tls.py``):

- the request is written in one piece (headers the caller signed, then the body);
- the answer is read by its framing: ``Content-Length``, ``chunked``, or until
  the server closes; ``Connection: close`` (or HTTP/1.0 without keep-alive)
  closes the connection after it;
- an idle connection is reused for ``keepalive_s`` (the server may close it
  first: it is then dropped, and a request that finds it closed mid-way fails
  as ``ConnectionClosedError``, which the client's retry covers, as a dropped
  kept-alive connection is under botocore);
- the connect is bounded by ``connect_timeout_s`` (``ConnectTimeoutError``;
  refused or unresolvable: ``EndpointConnectionError``), the answer by
  ``read_timeout_s`` from the moment the request was written
  (``ReadTimeoutError``); a connection that timed out is closed, never reused.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import cast
from urllib.parse import urlsplit

from botocore.exceptions import (
    ConnectionClosedError,
    ConnectTimeoutError,
    EndpointConnectionError,
    ReadTimeoutError,
)

from edgeproxy.aws.signing import host_of
from edgeproxy.tls import verified_context

MAX_HEAD = 64 * 1024  # an answer's status line and headers, at most


@dataclass(frozen=True, slots=True)
class ClientOptions:
    """How a client talks to its endpoint. No defaults here: the numbers are the process's
    settings (``Settings``; ``clients.py`` builds these from them), one source of truth."""

    connect_timeout_s: float
    read_timeout_s: float  # from the moment the request was written
    max_attempts: int  # ``JsonClient``'s: one call, retries included
    max_open: int  # connections open at once to the endpoint; more calls wait
    max_idle: int  # connections kept alive for reuse
    keepalive_s: float  # how long an idle connection is reused


class Answer:
    """Parses one HTTP/1.1 answer from the bytes as they arrive."""

    def __init__(self) -> None:
        self.status = 0
        self.keep_alive = True
        self._buffer = bytearray()
        self._body = bytearray()
        self._length: int | None = None  # Content-Length; None: chunked or until close
        self._chunked = False
        self._head_done = False

    def feed(self, data: bytes) -> bool:
        """Take ``data``; True once the answer is complete."""
        self._buffer += data
        if not self._head_done and not self._head():
            return False
        if self._chunked:
            return self._chunks()
        if self._length is None:
            return False  # until the server closes
        if len(self._buffer) >= self._length:
            self._body += self._buffer[: self._length]
            del self._buffer[: self._length]
            return True
        return False

    def closed(self) -> bool:
        """The server closed the connection: True if that completes the answer."""
        if self._head_done and self._length is None and not self._chunked:
            self._body += self._buffer
            self._buffer.clear()
            self.keep_alive = False
            return True
        return False

    def body(self) -> bytes:
        return bytes(self._body)

    def _head(self) -> bool:
        end = self._buffer.find(b"\r\n\r\n")
        if end < 0:
            if len(self._buffer) > MAX_HEAD:
                raise ValueError("the answer's headers are too long")
            return False
        lines = bytes(self._buffer[:end]).decode("latin-1").split("\r\n")
        del self._buffer[: end + 4]
        version, _, rest = lines[0].partition(" ")
        self.status = int(rest.split(" ", 1)[0])
        headers: dict[str, str] = {}
        for line in lines[1:]:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
        if 100 <= self.status < 200:  # an interim answer (100 Continue): the real one follows
            return self._head()
        connection = headers.get("connection", "").lower()
        self.keep_alive = connection != "close" and (
            version != "HTTP/1.0" or connection == "keep-alive"
        )
        self._chunked = "chunked" in headers.get("transfer-encoding", "").lower()
        if not self._chunked and "content-length" in headers:
            self._length = int(headers["content-length"])
        elif not self._chunked:
            self.keep_alive = False  # read until the server closes
        self._head_done = True
        return True

    def _chunks(self) -> bool:
        while True:
            line_end = self._buffer.find(b"\r\n")
            if line_end < 0:
                return False
            size = int(bytes(self._buffer[:line_end]).split(b";", 1)[0], 16)
            if size == 0:  # the last chunk, then optional trailers and an empty line
                trailer_end = (
                    line_end + 2
                    if self._buffer[line_end + 2 : line_end + 4] == b"\r\n"
                    else self._buffer.find(b"\r\n\r\n", line_end)
                )
                if trailer_end < 0 or len(self._buffer) < trailer_end + 2:
                    return False
                del self._buffer[: trailer_end + 2]
                return True
            if len(self._buffer) < line_end + 2 + size + 2:
                return False
            self._body += self._buffer[line_end + 2 : line_end + 2 + size]
            del self._buffer[: line_end + 2 + size + 2]


class Connection(asyncio.Protocol):
    """One TCP (or TLS) connection; one exchange at a time."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.transport: asyncio.Transport | None = None
        self.open = False
        self.idle_since = 0.0
        self._answer: Answer | None = None
        self._done: asyncio.Future[Answer] | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # A stream transport (uvloop's are not asyncio.Transport subclasses, hence the cast).
        self.transport = cast(asyncio.Transport, transport)
        self.open = True

    def data_received(self, data: bytes) -> None:
        if self._answer is None or self._done is None or self._done.done():
            self.close()  # bytes nobody asked for: the connection cannot be trusted
            return
        try:
            complete = self._answer.feed(data)
        except ValueError as exc:
            self._done.set_exception(ConnectionClosedError(endpoint_url=self.url, error=exc))
            self.close()
            return
        if complete:
            self._done.set_result(self._answer)

    def connection_lost(self, exc: Exception | None) -> None:
        self.open = False
        if self._done is None or self._done.done() or self._answer is None:
            return
        if self._answer.closed():
            self._done.set_result(self._answer)
        else:
            error = exc or ConnectionResetError("the server closed the connection")
            self._done.set_exception(ConnectionClosedError(endpoint_url=self.url, error=error))

    def send(self, request: bytes) -> asyncio.Future[Answer]:
        assert self.transport is not None
        self._answer = Answer()
        self._done = asyncio.get_running_loop().create_future()
        self.transport.write(request)
        return self._done

    def close(self) -> None:
        self.open = False
        if self.transport is not None:
            self.transport.close()


class Wire:
    """``await wire.post(headers, body) -> (status, body)`` on kept-alive connections."""

    def __init__(
        self,
        url: str,
        options: ClientOptions,
        *,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        """``options``: its timeouts and pool sizes; ``monotonic``: the clock an idle
        connection's age is read on (a test moves it)."""
        parts = urlsplit(url)
        self._url = url
        self._secure = parts.scheme == "https"
        self.tls = verified_context() if self._secure else None  # the process's one context
        self._host = parts.hostname or ""
        self._port = parts.port or (443 if self._secure else 80)
        self._prefix = f"POST / HTTP/1.1\r\nHost: {host_of(url)}\r\n".encode()
        self._connect_s = options.connect_timeout_s
        self._read_s = options.read_timeout_s
        self._keepalive_s = options.keepalive_s
        self._max_idle = options.max_idle
        self._monotonic = monotonic
        self._idle: list[Connection] = []
        self._slots = asyncio.Semaphore(options.max_open)

    async def post(self, headers: dict[str, str], body: bytes) -> tuple[int, bytes]:
        """Send ``POST /`` with ``headers`` and ``body``; the answer's status and body."""
        async with self._slots:  # a burst queues here instead of opening a socket per call
            return await self._exchange(headers, body)

    async def _exchange(self, headers: dict[str, str], body: bytes) -> tuple[int, bytes]:
        connection = self._reuse() or await self._connect()
        lines = "".join(f"{name}: {value}\r\n" for name, value in headers.items())
        request = b"".join(
            (self._prefix, f"Content-Length: {len(body)}\r\n{lines}\r\n".encode(), body)
        )
        try:
            async with asyncio.timeout(self._read_s):
                answer = await connection.send(request)
        except TimeoutError as exc:
            connection.close()
            raise ReadTimeoutError(endpoint_url=self._url, error=exc) from exc
        except BaseException:
            connection.close()
            raise
        if answer.keep_alive and connection.open and len(self._idle) < self._max_idle:
            connection.idle_since = self._monotonic()
            self._idle.append(connection)
        else:
            connection.close()
        return answer.status, answer.body()

    def _reuse(self) -> Connection | None:
        stale_before = self._monotonic() - self._keepalive_s
        while self._idle:
            connection = self._idle.pop()
            if connection.open and connection.idle_since > stale_before:
                return connection
            connection.close()
        return None

    async def _connect(self) -> Connection:
        loop = asyncio.get_running_loop()
        try:
            async with asyncio.timeout(self._connect_s):
                _, connection = await loop.create_connection(
                    lambda: Connection(self._url),
                    self._host,
                    self._port,
                    ssl=self.tls,
                    server_hostname=self._host if self._secure else None,
                )
        except TimeoutError as exc:
            raise ConnectTimeoutError(endpoint_url=self._url, error=exc) from exc
        except OSError as exc:
            raise EndpointConnectionError(endpoint_url=self._url, error=exc) from exc
        return connection

    async def close(self) -> None:
        """Close every idle connection (one in use closes when its exchange ends)."""
        idle, self._idle = self._idle, []
        for connection in idle:
            connection.close()
