"""uvicorn settings for serving the gateway outside Lambda: slow, idle and broken clients.

uvicorn's defaults let a client hold a connection forever while it trickles
its request head, accept any number of connections, and answer a malformed
request with plain text. Its ``limit_concurrency`` counts open connections
with requests, so about 600 idle connections (no key needed) had every
request answered 503. ``server_config`` sets:

| setting | value | effect |
|---|---|---|
| ``HEAD_TIMEOUT_S`` | 10 s | a request head (request line and headers) must arrive within this, on a new connection or between keep-alive requests; else the connection is closed |
| ``timeout_keep_alive`` | 5 s | an idle keep-alive connection is closed |
| ``MAX_REQUESTS`` | 512 | requests in progress beyond this are answered 503 (idle connections do not count) |
| ``WRITE_STALL_S`` | 30 s | a client that reads none of its answer for this long (the server's write buffer full the whole time) is cut off: its stream's upstream connection and its request slot are released |
| ``MAX_CONNECTIONS`` | 4096 (at most half the open-file limit) | beyond this, the connection idle longest (no request in progress) is closed to make room; a new one is refused only when every open connection is serving a request |
| ``h11_max_incomplete_event_size`` | 64 KiB | a request head larger than this is a 400 |
| ``backlog`` | 1024 | pending TCP connections |

So idle and slow connections cost a slot for at most their head or
keep-alive timeout, and cannot take the slots requests are served from; a
client that stops reading holds its slot and its upstream for at most
``WRITE_STALL_S``.

The request body's own deadline is ``gateway.body_read_timeout_seconds``
(``api/parsing.py``: 408). A request uvicorn cannot parse is answered with
OpenAI's error JSON (it has no route yet, so no surface of its own) instead
of uvicorn's plain text.
"""

from __future__ import annotations

import asyncio
import json
import resource
import time
from typing import Any

import h11
import uvicorn
from uvicorn.protocols.http.h11_impl import H11Protocol

HEAD_TIMEOUT_S = 10.0
KEEP_ALIVE_S = 5
WRITE_STALL_S = 30.0
MAX_REQUESTS = 512
MAX_CONNECTIONS = 4096
MAX_HEAD_BYTES = 64 * 1024
BACKLOG = 1024

_BAD_REQUEST = json.dumps(
    {
        "error": {
            "message": "The HTTP request could not be parsed.",
            "type": "invalid_request_error",
            "param": None,
            "code": "bad_request",
        }
    }
).encode()


def connection_ceiling(wanted: int = MAX_CONNECTIONS) -> int:
    """``wanted``, or half the process's open-file limit if that is lower."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    return wanted if soft == resource.RLIM_INFINITY else max(16, min(wanted, soft // 2))


class GuardedH11Protocol(H11Protocol):
    """uvicorn's h11 protocol: a request-head deadline, a JSON 400, and connection limits.

    ``max_requests`` bounds requests in progress (uvicorn's own limit is
    set off: it also counted idle connections); ``max_connections`` bounds
    open connections by closing the one idle longest.
    """

    head_timeout_s = HEAD_TIMEOUT_S
    write_stall_s = WRITE_STALL_S
    max_requests = MAX_REQUESTS
    max_connections = MAX_CONNECTIONS
    _head_timer: asyncio.TimerHandle | None = None
    _stall_timer: asyncio.TimerHandle | None = None
    _idle_since = 0.0

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        """Start the head deadline as soon as the connection exists; make room if full."""
        super().connection_made(transport)
        self._idle_since = time.monotonic()
        self._arm_head_timer()
        if len(self.connections) > self.max_connections:
            self._make_room()

    @property
    def idle(self) -> bool:
        """No request in progress on this connection."""
        return self.cycle is None or self.cycle.response_complete

    def _make_room(self) -> None:
        idle = [c for c in self.connections if isinstance(c, GuardedH11Protocol) and c.idle]
        victim = min(idle, key=lambda c: c._idle_since) if idle else self
        victim.transport.close()

    def connection_lost(self, exc: Exception | None) -> None:
        """Forget the head deadline and the write stall with the connection."""
        self._cancel_head_timer()
        self._cancel_stall_timer()
        super().connection_lost(exc)

    def pause_writing(self) -> None:
        """The client stopped reading (the write buffer is full): it has ``write_stall_s``."""
        super().pause_writing()
        self._cancel_stall_timer()
        self._stall_timer = self.loop.call_later(self.write_stall_s, self._write_stalled)

    def resume_writing(self) -> None:
        """The client read again."""
        self._cancel_stall_timer()
        super().resume_writing()

    def _cancel_stall_timer(self) -> None:
        if self._stall_timer is not None:
            self._stall_timer.cancel()
            self._stall_timer = None

    def _write_stalled(self) -> None:
        self._stall_timer = None
        self.logger.info("cutting off a client that read nothing of its answer in time")
        # abort, not close: close would wait for the buffer the client never reads to flush.
        self.transport.abort()

    def handle_events(self) -> None:
        """Parse what arrived; a complete head stops the deadline."""
        # uvicorn answers 503 when its limit is reached: here, by requests in progress only.
        self.limit_concurrency = 0 if len(self.tasks) >= self.max_requests else None
        try:
            super().handle_events()
        except UnicodeDecodeError:
            # A non-ASCII request target passes h11 but not uvicorn's decoding.
            self.send_400_response("Invalid HTTP request received.")
            return
        if self.cycle is not None and not self.cycle.response_complete:
            self._cancel_head_timer()
            self._idle_since = float("inf")  # serving: never the one closed to make room

    def on_response_complete(self) -> None:
        """The next request's head gets a deadline of its own."""
        super().on_response_complete()
        self._idle_since = time.monotonic()
        if not self.transport.is_closing():
            self._arm_head_timer()

    def send_400_response(self, msg: str) -> None:
        """A malformed request: OpenAI's error JSON, then close."""
        headers = [
            (b"content-type", b"application/json"),
            (b"connection", b"close"),
        ]
        try:
            self.transport.write(self.conn.send(h11.Response(status_code=400, headers=headers)))
            self.transport.write(self.conn.send(h11.Data(data=_BAD_REQUEST)))
            self.transport.write(self.conn.send(h11.EndOfMessage()))
        except h11.LocalProtocolError:
            pass  # a response was already under way: just close
        self.transport.close()

    def _arm_head_timer(self) -> None:
        self._cancel_head_timer()
        self._head_timer = self.loop.call_later(self.head_timeout_s, self._head_timeout)

    def _cancel_head_timer(self) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None

    def _head_timeout(self) -> None:
        self._head_timer = None
        if self.cycle is None or self.cycle.response_complete:
            self.logger.info("closing a connection whose request head did not arrive in time")
            self.transport.close()


def server_config(
    app: Any,
    *,
    head_timeout_s: float = HEAD_TIMEOUT_S,
    write_stall_s: float = WRITE_STALL_S,
    max_requests: int = MAX_REQUESTS,
    max_connections: int = MAX_CONNECTIONS,
    **overrides: Any,
) -> uvicorn.Config:
    """A ``uvicorn.Config`` for ``app`` with the limits above (``overrides`` win)."""
    limits = {
        "head_timeout_s": head_timeout_s,
        "write_stall_s": write_stall_s,
        "max_requests": max_requests,
        "max_connections": connection_ceiling(max_connections),
    }
    protocol = type("GuardedH11Protocol", (GuardedH11Protocol,), limits)
    settings: dict[str, Any] = {
        "http": protocol,
        "timeout_keep_alive": KEEP_ALIVE_S,
        "limit_concurrency": None,  # the protocol's max_requests instead (idle connections free)
        "h11_max_incomplete_event_size": MAX_HEAD_BYTES,
        "backlog": BACKLOG,
        **overrides,
    }
    return uvicorn.Config(app, **settings)
