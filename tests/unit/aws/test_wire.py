"""``Wire`` against real servers on loopback that answer with scripted bytes."""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import pytest
from botocore.exceptions import (
    ConnectionClosedError,
    EndpointConnectionError,
    ReadTimeoutError,
)

from edgeproxy.aws.wire import ClientOptions, Wire
from edgeproxy.clients import store_options
from edgeproxy.settings import Settings

JSON_OK = (
    b'HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 11\r\n\r\n{"ok":true}'
)
MAX_OPEN = Settings().aws_max_connections  # the process's pool size unless set


def options(connect_timeout_s: float, read_timeout_s: float, **more: Any) -> ClientOptions:
    """The store's options from default settings, with these timeouts (and ``more``)."""
    fields = {"connect_timeout_s": connect_timeout_s, "read_timeout_s": read_timeout_s, **more}
    return dataclasses.replace(store_options(Settings()), **fields)


# One script per request: the byte pieces to write (each drained), then close or keep.
Script = Callable[[int], tuple[list[bytes], bool]]


class Server:
    def __init__(self, script: Script) -> None:
        self.script = script
        self.connections = 0
        self.requests: list[bytes] = []
        self.url = ""

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = next(
                    int(line.split(b":")[1])
                    for line in head.split(b"\r\n")
                    if line.lower().startswith(b"content-length:")
                )
                self.requests.append(head + await reader.readexactly(length))
                pieces, close = self.script(len(self.requests))
                for piece in pieces:
                    writer.write(piece)
                    await writer.drain()
                if close:
                    break
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        writer.close()


@asynccontextmanager
async def serving(script: Script) -> AsyncIterator[Server]:
    server = Server(script)
    listener = await asyncio.start_server(server.handle, "127.0.0.1", 0)
    port = listener.sockets[0].getsockname()[1]
    server.url = f"http://127.0.0.1:{port}"
    async with listener:
        yield server


async def test_kept_alive_answers_share_one_connection_and_split_reads_join() -> None:
    head, body = JSON_OK.split(b"\r\n\r\n")
    async with serving(lambda n: ([head + b"\r\n\r\n", body[:4], body[4:]], False)) as server:
        wire = Wire(server.url, options(1.0, 5.0))
        for _ in range(3):
            assert await wire.post({"X-Amz-Target": "T.Op"}, b"{}") == (200, b'{"ok":true}')
        await wire.close()
    assert server.connections == 1
    first = server.requests[0]
    assert first.startswith(b"POST / HTTP/1.1\r\nHost: 127.0.0.1:")
    assert b"Content-Length: 2\r\n" in first
    assert b"X-Amz-Target: T.Op\r\n" in first


async def test_a_chunked_answer_with_trailers_is_read_whole() -> None:
    chunked = (
        b"HTTP/1.1 400 Bad Request\r\nTransfer-Encoding: chunked\r\n\r\n"
        b'5;ext=1\r\n{"a":\r\n4\r\n"b"}\r\n0\r\nX-Trailer: 1\r\n\r\n'
    )
    async with serving(lambda n: ([chunked], False)) as server:
        wire = Wire(server.url, options(1.0, 5.0))
        assert await wire.post({}, b"{}") == (400, b'{"a":"b"}')
        assert await wire.post({}, b"{}") == (400, b'{"a":"b"}')  # the connection stayed usable
        await wire.close()
    assert server.connections == 1


async def test_connection_close_and_answers_read_until_close_are_not_reused() -> None:
    closing = JSON_OK.replace(b"Content-Length: 11", b"Connection: close\r\nContent-Length: 11")
    until_close = b'HTTP/1.1 200 OK\r\n\r\n{"ok":true}'
    scripts = {1: ([closing], True), 2: ([until_close], True)}
    async with serving(lambda n: scripts[n]) as server:
        wire = Wire(server.url, options(1.0, 5.0))
        assert await wire.post({}, b"{}") == (200, b'{"ok":true}')
        assert await wire.post({}, b"{}") == (200, b'{"ok":true}')
        await wire.close()
    assert server.connections == 2


async def test_an_idle_connection_the_server_closed_is_not_reused() -> None:
    async with serving(lambda n: ([JSON_OK], n == 1)) as server:  # closes after answering
        wire = Wire(server.url, options(1.0, 5.0))
        assert await wire.post({}, b"{}") == (200, b'{"ok":true}')
        deadline = time.monotonic() + 10
        while wire._idle and wire._idle[0].open:  # the client sees the close
            assert time.monotonic() < deadline, "the server's close never arrived"
            await asyncio.sleep(0.01)
        assert await wire.post({}, b"{}") == (200, b'{"ok":true}')
        await wire.close()
    assert server.connections == 2


async def test_a_stalled_answer_is_a_read_timeout_and_its_connection_is_dropped() -> None:
    async with serving(lambda n: ([] if n == 1 else [JSON_OK], False)) as server:
        wire = Wire(server.url, options(1.0, 0.3))
        started = time.monotonic()
        with pytest.raises(ReadTimeoutError):
            await wire.post({}, b"{}")
        assert time.monotonic() - started < 3
        assert await wire.post({}, b"{}") == (200, b'{"ok":true}')  # on a new connection
        await wire.close()
    assert server.connections == 2


async def test_an_answer_cut_short_is_a_closed_connection() -> None:
    async with serving(lambda n: ([JSON_OK[:-3]], True)) as server:
        wire = Wire(server.url, options(1.0, 5.0))
        with pytest.raises(ConnectionClosedError):
            await wire.post({}, b"{}")


async def test_garbage_for_an_answer_is_a_closed_connection() -> None:
    async with serving(lambda n: ([b"HTTP/1.1 OK nonsense\r\n\r\n"], False)) as server:
        wire = Wire(server.url, options(1.0, 5.0))
        with pytest.raises(ConnectionClosedError):
            await wire.post({}, b"{}")


async def test_a_refused_port_is_an_endpoint_connection_error() -> None:
    listener = await asyncio.start_server(lambda r, w: None, "127.0.0.1", 0)
    port = listener.sockets[0].getsockname()[1]
    listener.close()
    await listener.wait_closed()
    with pytest.raises(EndpointConnectionError):
        await Wire(f"http://127.0.0.1:{port}", options(1.0, 5.0)).post({}, b"{}")


async def test_a_burst_opens_at_most_max_open_connections() -> None:
    async with serving(lambda n: ([JSON_OK], False)) as server:
        wire = Wire(server.url, options(5.0, 10.0))
        answers = await asyncio.gather(*(wire.post({}, b"{}") for _ in range(MAX_OPEN + 50)))
        await wire.close()
    assert answers == [(200, b'{"ok":true}')] * (MAX_OPEN + 50)
    assert server.connections <= MAX_OPEN


async def test_a_smaller_pool_from_the_options_caps_the_connections() -> None:
    async with serving(lambda n: ([JSON_OK], False)) as server:
        wire = Wire(server.url, options(5.0, 10.0, max_open=3, max_idle=3))
        answers = await asyncio.gather(*(wire.post({}, b"{}") for _ in range(20)))
        await wire.close()
    assert answers == [(200, b'{"ok":true}')] * 20
    assert server.connections <= 3  # opened over the whole burst: none closed, none added


async def test_past_max_idle_a_finished_connection_is_closed_not_kept() -> None:
    async with serving(lambda n: ([JSON_OK], False)) as server:
        wire = Wire(server.url, options(5.0, 10.0, max_open=3, max_idle=1))
        await asyncio.gather(*(wire.post({}, b"{}") for _ in range(20)))
        idle = len(wire._idle)
        await wire.close()
    assert idle == 1
