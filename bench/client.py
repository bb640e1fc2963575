"""A minimal asyncio HTTP/1.1 client that sees when the first token of a stream arrives.

wrk measures a response only as a whole, so it cannot tell time to first
token. This client writes the request in one ``write`` over a kept-alive
connection and times three moments per request (``time.monotonic()``, which
is system-wide on Linux, so the store's call log can be set against it):
the first SSE event with non-empty ``delta.content``, the ``[DONE]`` event,
and the end of the body. Raw streams rather than httpx keep its own cost per
chunk small and steady, the same on both sides of the comparison. It also
serves as the fallback load generator when wrk is not installed.
"""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import dataclass
from urllib.parse import urlsplit

from bench.workloads import Call


@dataclass(frozen=True, slots=True)
class Sample:
    """One request's moments (monotonic seconds); ``first``/``done`` are None for JSON."""

    sent: float
    first: float | None
    done: float | None
    end: float

    @property
    def latency_ms(self) -> float:
        """Request sent to body complete."""
        return 1000 * (self.end - self.sent)

    @property
    def ttft_ms(self) -> float:
        """Request sent to the first content token."""
        return 1000 * ((self.first or self.end) - self.sent)


class Connection:
    """One kept-alive connection to ``url``."""

    def __init__(self, url: str) -> None:
        parts = urlsplit(url)
        self._host = parts.hostname or "127.0.0.1"
        self._port = parts.port or 80
        self._reader: asyncio.StreamReader | None = None
        self._writer: asyncio.StreamWriter | None = None

    async def request(self, call: Call) -> Sample:
        """Send ``call``, read the whole answer; raises unless the status is 200."""
        if self._writer is None:
            self._reader, self._writer = await asyncio.open_connection(self._host, self._port)
        assert self._reader is not None
        body = call.body.encode()
        head = [f"POST {call.path} HTTP/1.1", f"Host: {self._host}:{self._port}"]
        head += [f"{k}: {v}" for k, v in call.headers.items()]
        head.append(f"Content-Length: {len(body)}")
        sent = time.monotonic()
        self._writer.write(("\r\n".join(head) + "\r\n\r\n").encode() + body)
        status, headers = await self._head()
        if headers.get("transfer-encoding", "").lower() == "chunked":
            first, done = await self._chunked()
        else:
            await self._reader.readexactly(int(headers.get("content-length", "0")))
            first = done = None
        if status != 200:
            raise RuntimeError(f"{call.path} answered {status}")
        return Sample(sent, first, done, time.monotonic())

    async def _head(self) -> tuple[int, dict[str, str]]:
        assert self._reader is not None
        raw = (await self._reader.readuntil(b"\r\n\r\n")).decode("latin-1")
        lines = raw.split("\r\n")
        headers = {}
        for line in lines[1:]:
            name, _, value = line.partition(":")
            if value:
                headers[name.strip().lower()] = value.strip()
        return int(lines[0].split(" ", 2)[1]), headers

    async def _chunked(self) -> tuple[float | None, float | None]:
        assert self._reader is not None
        first = done = None
        pending = b""
        while True:
            size = int((await self._reader.readuntil(b"\r\n")).split(b";", 1)[0], 16)
            if size == 0:
                await self._reader.readuntil(b"\r\n")
                return first, done
            pending += await self._reader.readexactly(size)
            await self._reader.readexactly(2)
            if done is None:
                *events, pending = pending.split(b"\n\n")
                for event in events:
                    if event.startswith(b"data: [DONE]"):
                        done = time.monotonic()
                    elif first is None and _has_content(event):
                        first = time.monotonic()

    async def close(self) -> None:
        """Close the connection."""
        if self._writer is not None:
            self._writer.close()
            await self._writer.wait_closed()
            self._writer = None


def _has_content(event: bytes) -> bool:
    if not event.startswith(b"data: "):
        return False
    chunk = json.loads(event[6:])
    choices = chunk.get("choices") or [{}]
    return bool((choices[0].get("delta") or {}).get("content"))


async def closed_loop(
    url: str, call: Call, concurrency: int, seconds: float, failed: list[int] | None = None
) -> list[Sample]:
    """``concurrency`` connections, each sending its next request when the last one ends.

    A non-200 answer raises, unless ``failed`` is given: then it is counted in ``failed[0]``.
    """
    deadline = time.monotonic() + seconds
    samples: list[Sample] = []

    async def worker() -> None:
        conn = Connection(url)
        try:
            while time.monotonic() < deadline:
                try:
                    samples.append(await conn.request(call))
                except RuntimeError:
                    if failed is None:
                        raise
                    failed[0] += 1
        finally:
            await conn.close()

    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return samples


async def sequential(url: str, call: Call, count: int, gap_s: float) -> list[Sample]:
    """``count`` requests one at a time, ``gap_s`` apart (room for after-response writes)."""
    conn = Connection(url)
    samples = []
    try:
        for _ in range(count):
            samples.append(await conn.request(call))
            await asyncio.sleep(gap_s)
    finally:
        await conn.close()
    return samples
