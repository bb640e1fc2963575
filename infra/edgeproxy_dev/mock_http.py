"""Just enough HTTP/1.1 on asyncio streams for the mock upstream.

Hand-rolled rather than uvicorn because the mock must misbehave in ways a
framework prevents: reset the socket before headers, hold a request forever,
end a chunked body without its terminator.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import socket
import struct
from dataclasses import dataclass
from http import HTTPStatus
from typing import Any
from urllib.parse import parse_qsl

MAX_HEAD = 64 * 1024


@dataclass(frozen=True, slots=True)
class Request:
    """One parsed request; the body is read completely before it is answered."""

    method: str
    path: str
    headers: dict[str, str]  # names lower-cased
    body: bytes
    query: dict[str, str] = dataclasses.field(default_factory=dict)

    @property
    def keep_alive(self) -> bool:
        """HTTP/1.1 keeps the connection unless the client asked to close it."""
        return self.headers.get("connection", "").lower() != "close"

    def json(self) -> Any:
        """The parsed body, or ``None`` if it is empty or not JSON."""
        try:
            return json.loads(self.body) if self.body else None
        except ValueError:
            return None


async def read_request(reader: asyncio.StreamReader) -> Request | None:
    """The next request on a connection, or ``None`` when the client closed it."""
    try:
        head = await reader.readuntil(b"\r\n\r\n")
    except asyncio.IncompleteReadError as exc:
        if exc.partial.strip():
            raise ConnectionError("request head cut short") from exc
        return None
    lines = head.decode("latin-1").split("\r\n")
    method, target, _version = lines[0].split(" ", 2)
    headers: dict[str, str] = {}
    for line in lines[1:]:
        if line:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
    if headers.get("transfer-encoding", "").lower() == "chunked":
        body = await _read_chunked(reader)
    else:
        body = await reader.readexactly(int(headers.get("content-length", "0")))
    path, _, query = target.partition("?")
    return Request(
        method=method, path=path, headers=headers, body=body, query=dict(parse_qsl(query))
    )


async def _read_chunked(reader: asyncio.StreamReader) -> bytes:
    body = bytearray()
    while True:
        size = int((await reader.readuntil(b"\r\n")).split(b";", 1)[0], 16)
        if size == 0:
            while (await reader.readuntil(b"\r\n")) != b"\r\n":
                pass  # trailers
            return bytes(body)
        body += await reader.readexactly(size)
        await reader.readexactly(2)


def response_head(status: int, headers: dict[str, str]) -> bytes:
    """Status line and headers, ending with the blank line."""
    reason = HTTPStatus(status).phrase if status in HTTPStatus._value2member_map_ else "Unknown"
    lines = [f"HTTP/1.1 {status} {reason}"] + [f"{k}: {v}" for k, v in headers.items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


async def write_json(
    writer: asyncio.StreamWriter,
    status: int,
    payload: Any,
    headers: dict[str, str],
    *,
    raw: bytes | None = None,
) -> None:
    """A complete JSON answer with Content-Length (``raw`` bytes instead, if given)."""
    body = raw if raw is not None else json.dumps(payload).encode()
    head = {"content-type": "application/json", "content-length": str(len(body)), **headers}
    writer.write(response_head(status, head) + body)
    await writer.drain()


async def start_chunked(writer: asyncio.StreamWriter, headers: dict[str, str]) -> None:
    """Headers of a 200 ``text/event-stream`` answer with chunked transfer."""
    head = {
        "content-type": "text/event-stream; charset=utf-8",
        "cache-control": "no-cache",
        "transfer-encoding": "chunked",
        **headers,
    }
    writer.write(response_head(200, head))
    await writer.drain()


async def write_chunk(writer: asyncio.StreamWriter, data: bytes) -> None:
    """One chunk of a chunked body."""
    writer.write(b"%x\r\n%s\r\n" % (len(data), data))
    await writer.drain()


async def end_chunked(writer: asyncio.StreamWriter) -> None:
    """The terminating zero-length chunk."""
    writer.write(b"0\r\n\r\n")
    await writer.drain()


def reset(writer: asyncio.StreamWriter) -> None:
    """Close with a TCP RST (SO_LINGER 0) instead of an orderly FIN."""
    sock = writer.get_extra_info("socket")
    if sock is not None:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    writer.transport.abort()


async def wait_for_close(reader: asyncio.StreamReader) -> None:
    """Hold the connection until the client gives up on it."""
    try:
        while await reader.read(65536):
            pass
    except ConnectionError:
        pass


async def pause(writer: asyncio.StreamWriter, ms: int, keepalive_ms: int | None) -> None:
    """Wait ``ms``, sending an SSE comment every ``keepalive_ms`` if set."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + ms / 1000
    while (left := deadline - loop.time()) > 0:
        step = min(left, keepalive_ms / 1000) if keepalive_ms else left
        await asyncio.sleep(step)
        if keepalive_ms and loop.time() < deadline:
            await write_chunk(writer, b": keepalive\n\n")
