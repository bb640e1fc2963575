"""``AiohttpTransport`` keeps what the httpx client promised: no cookies, exact URLs, mapped errors."""

from __future__ import annotations

import asyncio
import socket
import time
from collections.abc import AsyncIterator

import httpx
import pytest
from aiohttp import web

from edgeproxy.upstream.client import make_http_client

seen: list[web.Request] = []


async def cookie(request: web.Request) -> web.Response:
    seen.append(request)
    response = web.json_response({"ok": True})
    response.set_cookie("session", "caller-one-secret")
    return response


async def cut(request: web.Request) -> web.StreamResponse:
    response = web.StreamResponse(headers={"content-length": "1000"})
    await response.prepare(request)
    await response.write(b"x" * 10)
    assert request.transport is not None
    request.transport.close()  # the connection drops with 990 bytes promised
    return response


@pytest.fixture
async def server() -> AsyncIterator[str]:
    seen.clear()
    app = web.Application()
    app.router.add_post("/cookie", cookie)
    app.router.add_post("/cut", cut)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    yield f"http://127.0.0.1:{port}"
    await runner.cleanup()


async def test_a_cookie_an_upstream_set_is_never_sent_again(server: str) -> None:
    client = make_http_client()
    try:
        for _ in range(2):
            answer = await client.post(f"{server}/cookie", json={})
            assert answer.status_code == 200
    finally:
        await client.aclose()
    assert [r.headers.get("cookie") for r in seen] == [None, None]


async def test_the_url_is_sent_as_httpx_encoded_it(server: str) -> None:
    client = make_http_client()
    try:
        await client.post(f"{server}/cookie", params={"api-version": "2024-10-01", "p": "a/b c"})
    finally:
        await client.aclose()
    assert seen[0].raw_path == "/cookie?api-version=2024-10-01&p=a%2Fb+c"
    assert seen[0].headers["user-agent"] == "edgeproxy/0.1"


async def test_a_cut_body_is_a_read_error(server: str) -> None:
    client = make_http_client()
    try:
        with pytest.raises(httpx.ReadError):
            await client.post(f"{server}/cut", json={})
    finally:
        await client.aclose()


async def test_a_refused_connection_is_a_connect_error() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    client = make_http_client()
    try:
        with pytest.raises(httpx.ConnectError):
            await client.post(f"http://127.0.0.1:{port}/", json={})
    finally:
        await client.aclose()


async def test_a_silent_upstream_is_a_read_timeout() -> None:
    done = asyncio.Event()

    async def silent(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.read(100)
        await done.wait()  # says nothing until the test is over
        writer.close()

    listener = await asyncio.start_server(silent, "127.0.0.1", 0)
    port = listener.sockets[0].getsockname()[1]
    client = make_http_client()
    try:
        with pytest.raises(httpx.ReadTimeout):
            await client.post(f"http://127.0.0.1:{port}/", json={}, timeout=httpx.Timeout(0.2))
    finally:
        done.set()
        await client.aclose()
        listener.close()


async def test_the_bytes_that_arrived_with_a_drop_are_read_before_its_error() -> None:
    # Headers, one SSE event and the FIN in one write: the client sees data and EOF at once.
    # aiohttp's readers raise a set error before the buffered bytes; the client must not.
    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        event = b'data: {"last": "words"}\n\n'
        writer.write(
            b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
            b"transfer-encoding: chunked\r\n\r\n" + f"{len(event):x}\r\n".encode() + event + b"\r\n"
        )
        await writer.drain()
        writer.close()

    listener = await asyncio.start_server(answer, "127.0.0.1", 0)
    port = listener.sockets[0].getsockname()[1]
    client = make_http_client()
    try:
        request = client.build_request("POST", f"http://127.0.0.1:{port}/", json={})
        response = await client.send(request, stream=True)
        # Wait until the client holds the data and the drop together (the race itself).
        # (httpx's bound stream wraps the transport's body, which holds aiohttp's reader)
        content = response.stream._stream._response.content  # type: ignore[attr-defined]
        deadline = time.monotonic() + 10
        while content.exception() is None:
            assert time.monotonic() < deadline, "the drop never reached the client"
            await asyncio.sleep(0.01)
        received: list[bytes] = []

        async def read() -> None:
            async for chunk in response.aiter_raw():
                received.append(chunk)

        with pytest.raises(httpx.ReadError):
            await read()
        assert b"".join(received) == b'data: {"last": "words"}\n\n'
        await response.aclose()
    finally:
        await client.aclose()
        listener.close()
        await listener.wait_closed()


async def _answering(reply: bytes) -> tuple[asyncio.Server, int]:
    """A server that reads a request's head, writes ``reply`` and closes the connection."""

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        writer.write(reply)
        await writer.drain()
        writer.close()

    listener = await asyncio.start_server(answer, "127.0.0.1", 0)
    return listener, listener.sockets[0].getsockname()[1]


# httpx-aiohttp (0.2.0) maps both of the next two otherwise: a connection dropped after the
# request was sent becomes ``ConnectTimeout`` (routing would read "never reached the
# upstream", not a request-shaped reset), and a malformed answer escapes as aiohttp's own
# exception, which no ``httpx`` handler catches.
@pytest.mark.parametrize("reply", [b"", b"HTTP/1.1 200 OK\r\ncontent-length: 10\r\n"])
async def test_a_drop_after_the_request_is_a_read_error_not_a_connect_failure(
    reply: bytes,
) -> None:
    listener, port = await _answering(reply)
    client = make_http_client()
    try:
        with pytest.raises(httpx.ReadError):
            await client.post(f"http://127.0.0.1:{port}/", json={})
    finally:
        await client.aclose()
        listener.close()
        await listener.wait_closed()


async def test_a_malformed_answer_is_a_protocol_error() -> None:
    listener, port = await _answering(b"HTTP/1.1 abc nonsense\r\n\r\n")
    client = make_http_client()
    try:
        with pytest.raises(httpx.RemoteProtocolError):
            await client.post(f"http://127.0.0.1:{port}/", json={})
    finally:
        await client.aclose()
        listener.close()
        await listener.wait_closed()
