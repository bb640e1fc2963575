"""A movable clock for local runs and tests: real time plus an offset.

Real time keeps a gateway's own deadlines and the mock upstreams' latencies
progressing as usual; the offset lets a test jump over a cooldown, a TTL or
a minute boundary instead of sleeping through it.

    clock = Clock()
    gateway = await build_gateway(settings, clock=clock.now)
    clock.advance(60)  # every later reading is a minute later

A gateway in another process follows along through its runner's clock
endpoint (``runner --clock-control``, see ``clock_control``).
"""

from __future__ import annotations

import threading
import time

from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

CLOCK_PATH = "/_dev/clock"  # served by the dev runner only, never by the package


class Clock:
    """Epoch seconds from ``time.time`` plus an offset that only grows; thread-safe."""

    def __init__(self, offset: float = 0.0) -> None:
        self._lock = threading.Lock()
        self._offset = offset

    @property
    def offset(self) -> float:
        """Seconds this clock runs ahead of real time."""
        with self._lock:
            return self._offset

    def now(self) -> float:
        """The current time (pass ``clock.now`` wherever a clock is injected)."""
        with self._lock:
            offset = self._offset
        return time.time() + offset

    def advance(self, seconds: float) -> None:
        """Jump ahead by ``seconds``; time never runs backwards."""
        if seconds < 0:
            raise ValueError("a clock only moves forward")
        with self._lock:
            self._offset += seconds

    def set_offset(self, offset: float) -> None:
        """Run ``offset`` seconds ahead of real time (idempotent, for followers)."""
        with self._lock:
            if offset < self._offset:
                raise ValueError("a clock only moves forward")
            self._offset = offset


def clock_control(app: ASGIApp, clock: Clock) -> ASGIApp:
    """``app`` with ``POST /_dev/clock {"offset": s}`` setting ``clock``'s offset.

    Lets a test move the clock of a gateway running in another process; the
    dev runner mounts it only when asked (``--clock-control``).
    """

    async def wrapped(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] != CLOCK_PATH:
            await app(scope, receive, send)
            return
        try:
            clock.set_offset(float((await Request(scope, receive).json())["offset"]))
        except (ValueError, KeyError, TypeError) as exc:
            response = JSONResponse({"error": str(exc)}, status_code=400)
        else:
            response = JSONResponse({"offset": clock.offset})
        await response(scope, receive, send)

    return wrapped
