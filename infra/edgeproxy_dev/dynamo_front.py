"""A small HTTP/1.1 front end for a WSGI app: one asyncio loop, kept-alive connections.

werkzeug's development server (what moto ships) closes every connection after
one response and runs each request in a thread of its own; under load the
threads fight over the GIL and every DynamoDB call pays a TCP connect. This
front end parses requests on one event loop and calls the WSGI app inline, so:

- connections stay open (HTTP/1.1 keep-alive, as DynamoDB's endpoint does);
- requests run one at a time, in arrival order, body included: the server is
  linearizable without a lock (each item write is atomic, as on DynamoDB);
  a long BatchWriteItem runs in parts with other connections' calls between
  them (``dynamo_batches``), as DynamoDB serves reads beside a batch;
- there is no thread to contend with.

It speaks the subset of HTTP/1.1 that SDK clients send: ``Content-Length``
bodies (a chunked request gets 411), ``Connection: close`` and HTTP/1.0
honoured. Loopback development use only.

    server = await serve(app, "127.0.0.1", 0)   # an asyncio.Server; port in sockets
"""

from __future__ import annotations

import asyncio
import io
import socket
import sys
from collections.abc import Callable, Iterable
from typing import Any

from edgeproxy_dev import dynamo_batches

WSGIApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]
MAX_HEAD = 64 * 1024
_SKIPPED = {"server", "content-length", "connection", "transfer-encoding", "date"}


class _Answer:
    """What ``start_response`` was given."""

    def __init__(self) -> None:
        self.status = "500 Internal Server Error"
        self.headers: list[tuple[str, str]] = []

    def start(self, status: str, headers: list[tuple[str, str]], *exc: Any) -> Any:
        self.status, self.headers = status, headers
        return lambda data: None  # moto returns its body; nothing calls write()


def _environ(method: str, target: str, version: str, headers: list[tuple[str, str]], body: bytes,
             server: tuple[str, int]) -> dict[str, Any]:  # fmt: skip
    path, _, query = target.partition("?")
    environ: dict[str, Any] = {
        "REQUEST_METHOD": method,
        "SCRIPT_NAME": "",
        "PATH_INFO": path,
        "QUERY_STRING": query,
        "SERVER_NAME": server[0],
        "SERVER_PORT": str(server[1]),
        "SERVER_PROTOCOL": version,
        "REMOTE_ADDR": "127.0.0.1",
        "CONTENT_LENGTH": str(len(body)),
        "wsgi.version": (1, 0),
        "wsgi.url_scheme": "http",
        "wsgi.input": io.BytesIO(body),
        "wsgi.errors": sys.stderr,
        "wsgi.multithread": False,
        "wsgi.multiprocess": False,
        "wsgi.run_once": False,
    }
    for name, value in headers:
        key = name.upper().replace("-", "_")
        if key == "CONTENT_TYPE":
            environ["CONTENT_TYPE"] = value
        elif key != "CONTENT_LENGTH":
            environ["HTTP_" + key] = value
    return environ


def call_app(app: WSGIApp, environ: dict[str, Any]) -> tuple[str, list[tuple[str, str]], bytes]:
    """Run ``app`` to completion: status line, headers and the whole body."""
    answer = _Answer()
    result = app(environ, answer.start)
    try:
        body = b"".join(result)
    finally:
        close = getattr(result, "close", None)
        if close is not None:
            close()
    return answer.status, answer.headers, body


def _response(status: str, headers: list[tuple[str, str]], body: bytes, keep: bool) -> bytes:
    lines = [f"HTTP/1.1 {status}"]
    lines += [f"{n}: {v}" for n, v in headers if n.lower() not in _SKIPPED]
    lines.append(f"Content-Length: {len(body)}")
    if not keep:
        lines.append("Connection: close")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body


async def _connection(app: WSGIApp, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:  # fmt: skip
    sock = writer.get_extra_info("socket")
    if sock is not None:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    server = writer.get_extra_info("sockname")[:2]
    try:
        while True:
            try:
                head = await reader.readuntil(b"\r\n\r\n")
            except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ConnectionError):
                return
            request_line, *header_lines = head[:-4].decode("latin-1").split("\r\n")
            method, target, version = request_line.split(" ", 2)
            headers = []
            for line in header_lines:
                name, _, value = line.partition(":")
                headers.append((name.strip(), value.strip()))
            fields = {n.lower(): v for n, v in headers}
            keep = version == "HTTP/1.1" and fields.get("connection", "").lower() != "close"
            if "chunked" in fields.get("transfer-encoding", "").lower():
                writer.write(_response("411 Length Required", [], b"", keep=False))
                await writer.drain()
                return
            body = await reader.readexactly(int(fields.get("content-length") or 0))
            split = dynamo_batches.parts(fields.get("x-amz-target", ""), body)
            if split is None:
                environ = _environ(method, target, version, headers, body, server)
                status, out_headers, out = call_app(app, environ)  # inline: one at a time
            else:
                answers = []
                for index, part in enumerate(split):
                    if index:  # a turn for the calls that arrived meanwhile
                        await asyncio.sleep(dynamo_batches.TURN_S)
                    answers.append(call_app(app, _environ(method, target, version, headers, part, server)))  # fmt: skip
                status, out_headers, out = dynamo_batches.joined(answers)
            writer.write(_response(status, out_headers, out, keep))
            await writer.drain()
            if not keep:
                return
    except (ConnectionError, asyncio.IncompleteReadError):
        return
    finally:
        writer.close()


class Front:
    """A running front end: ``port``, and ``close()`` that ends kept-alive connections too."""

    def __init__(self, server: asyncio.Server, tasks: set[asyncio.Task[None]]) -> None:
        self.server = server
        self._tasks = tasks

    @property
    def port(self) -> int:
        """The bound port."""
        port: int = self.server.sockets[0].getsockname()[1]
        return port

    async def close(self) -> None:
        """Stop listening and end every connection (idle ones wait in a read)."""
        self.server.close()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)


async def serve(app: WSGIApp, host: str = "127.0.0.1", port: int = 0) -> Front:
    """Start serving ``app`` on ``host:port`` (0: a free port)."""
    tasks: set[asyncio.Task[None]] = set()

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        tasks.add(task)
        try:
            await _connection(app, reader, writer)
        except asyncio.CancelledError:
            pass  # closing: the connection ends here, quietly
        finally:
            tasks.discard(task)

    server = await asyncio.start_server(handle, host, port, limit=MAX_HEAD, backlog=512)
    return Front(server, tasks)
