"""The embedded DynamoDB's HTTP front end: kept-alive connections, one request at a time."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable
from typing import Any

from edgeproxy_dev.dynamo_front import serve


def _echo(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
    body = environ["wsgi.input"].read(int(environ["CONTENT_LENGTH"]))
    target = environ.get("HTTP_X_AMZ_TARGET", "")
    start_response("200 OK", [("Content-Type", "text/plain"), ("Server", "moto")])
    return [target.encode(), b":", body]


async def _exchange(port: int, requests: list[bytes]) -> list[bytes]:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    answers = []
    try:
        for request in requests:
            writer.write(request)
            head = await reader.readuntil(b"\r\n\r\n")
            length = next(
                int(line.split(b":")[1])
                for line in head.split(b"\r\n")
                if line.lower().startswith(b"content-length")
            )
            answers.append(head + await reader.readexactly(length))
        answers.append(await reader.read())  # b"" once the server closed the connection
    finally:
        writer.close()
    return answers


def _post(body: bytes, *headers: str) -> bytes:
    head = ["POST / HTTP/1.1", "Host: x", f"Content-Length: {len(body)}", *headers]
    return ("\r\n".join(head) + "\r\n\r\n").encode() + body


async def test_one_connection_carries_many_requests_until_the_client_says_close() -> None:
    front = await serve(_echo)
    try:
        answers = await _exchange(
            front.port,
            [
                _post(b"one", "X-Amz-Target: A"),
                _post(b"two", "X-Amz-Target: B"),
                _post(b"three", "Connection: close"),
            ],
        )
    finally:
        await front.close()
    assert answers[0].endswith(b"A:one")
    assert answers[1].endswith(b"B:two")
    assert b"Connection: close" in answers[2]
    assert answers[3] == b""  # closed after the third
    assert b"Connection: close" not in answers[0]
    assert answers[0].count(b"Server:") == 0  # the app's Server header is dropped


async def test_a_chunked_request_is_refused_with_411() -> None:
    front = await serve(_echo)
    try:
        request = b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
        answers = await _exchange(front.port, [request])
    finally:
        await front.close()
    assert answers[0].startswith(b"HTTP/1.1 411")


async def test_close_ends_idle_kept_alive_connections() -> None:
    front = await serve(_echo)
    reader, writer = await asyncio.open_connection("127.0.0.1", front.port)
    writer.write(_post(b"x"))
    await reader.readuntil(b":x")
    await front.close()
    assert await asyncio.wait_for(reader.read(), 5) == b""
    writer.close()
