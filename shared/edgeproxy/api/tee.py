"""``Tee``: a response played to no client, recorded as it goes, followed by the live one.

A keyed request (``Idempotency-Key``) must finish even if its client leaves,
so its response is not sent to the client directly: a task the gateway holds
plays it into a ``Tee`` (a receive that never reports a disconnect, a send
that never fails), and the client's own response, ``Following``, sends what
the tee recorded as it arrives. A client that leaves stops only its
follower; the upstream call, the outcome writes and the stored answer go on.

``Following`` ends when the tee does, even after its client left, so a
host that freezes the process once the response is over (the streaming
Lambda) still lets the first call store its answer.
"""

from __future__ import annotations

import asyncio
from typing import Any

from starlette.responses import Response
from starlette.types import Message, Receive, Scope, Send

CLIENT_CLOSED = 499  # nginx's code for "the client closed the request"; never reaches it


class Tee:
    """Every ASGI message a response sent, the error that ended it, and whether it ended."""

    def __init__(self) -> None:
        self.messages: list[Message] = []
        self.error: BaseException | None = None
        self.ended = False
        self._moved = asyncio.Event()

    async def send(self, message: Message) -> None:
        """The ASGI send the played response is given."""
        self.messages.append(message)
        self._wake()

    async def receive(self) -> Message:
        """The ASGI receive the played response is given: no disconnect, ever (it waits)."""
        await asyncio.Event().wait()
        raise AssertionError("unreachable")  # pragma: no cover

    def end(self, error: BaseException | None = None) -> None:
        """The response is over (``error``: it raised)."""
        self.error = error
        self.ended = True
        self._wake()

    def started(self) -> bool:
        """Whether the response's start message was sent."""
        return bool(self.messages)

    async def moved(self) -> None:
        """Return once the tee has a new message or ended."""
        event = self._moved
        await event.wait()

    def _wake(self) -> None:
        event, self._moved = self._moved, asyncio.Event()
        event.set()


async def until_started(tee: Tee) -> None:
    """Return once ``tee`` holds its response's start, or ended."""
    while not (tee.started() or tee.ended):
        await tee.moved()


async def until_ended(tee: Tee) -> None:
    """Return once ``tee`` ended."""
    while not tee.ended:
        await tee.moved()


class Following(Response):
    """The client's response: what ``tee`` records, sent as it arrives (see the module doc).

    ``gone``: the client left before the answer started; it is answered 499
    (nobody reads it) and the response still lasts until the tee ends.
    """

    def __init__(self, tee: Tee, *, gone: bool = False, **kwargs: Any) -> None:
        super().__init__(status_code=CLIENT_CLOSED if gone else 200, **kwargs)
        self._tee = tee
        self._gone = gone

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self._gone:
            await super().__call__(scope, receive, send)
            await until_ended(self._tee)
            return
        sent = 0
        live = True
        while True:
            while sent < len(self._tee.messages):
                message = self._tee.messages[sent]
                sent += 1
                live = live and await _sent(send, message)
            if self._tee.ended:
                return
            await self._tee.moved()


async def _sent(send: Send, message: Message) -> bool:
    """Send ``message``; False once the client is gone (later messages are not sent)."""
    try:
        await send(message)
    except OSError:
        return False
    return True
