"""Capture of a complete answer, as the gateway sends it, for the stored-answer store.

``Captured`` wraps the ASGI response the pipeline built (a ``JSONResponse``,
a ``RelayedResponse``) and tees what it sends: the status, the headers, every
body message. When the response has been sent whole it asks ``complete()``
(a JSON answer: always; a stream: whether its relay ended in ``Closing``,
``Watched``) and hands the ``StoredAnswer`` to ``keep``, before the last
body message goes out (so the client's next request finds it). Nothing is kept
unless every one of these holds:

- the status is 200 and the response reached its last message (no exception,
  the client did not leave: a ``RelayedResponse`` whose client left ends early
  without its last message, so ``more_body`` never turned false);
- a stream saw its ``Closing`` (never a ``Failed``: a cut or truncated stream);
- the body is at most ``limit`` bytes (past it the tee stops copying);
- the body carries nothing shaped like a credential (``usage.capture.redacted``
  would change it): an answer that echoes a key is never stored.

Only the headers in ``STORED_HEADERS`` are kept: the request id, rate-limit
headers and the rest belong to the request that replays it.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from starlette.responses import Response
from starlette.types import Message, Receive, Scope, Send

from edgeproxy.service.stream.events import Closing, StreamItem
from edgeproxy.service.usage.capture import redacted
from edgeproxy.state.answers import STORED_HEADERS, StoredAnswer

logger = logging.getLogger(__name__)

Keep = Callable[[StoredAnswer], Awaitable[None]]


class Watched:
    """A relay's events passed through unchanged, noting whether the answer completed."""

    def __init__(self, events: AsyncIterator[StreamItem]) -> None:
        self._events = events
        self.closing: Closing | None = None  # the stream's ``Closing``: it is complete

    def __aiter__(self) -> Watched:
        return self

    async def __anext__(self) -> StreamItem:
        item = await self._events.__anext__()
        if isinstance(item, Closing):
            self.closing = item
        return item

    async def aclose(self) -> None:
        """Close the relay (``RelayedResponse`` closes its events however it ended)."""
        aclose = getattr(self._events, "aclose", None)
        if aclose is not None:
            await aclose()


def carries_secret(body: bytes) -> bool:
    """Whether ``body`` holds a string shaped like a credential (never stored)."""
    text = body.decode("utf-8", errors="replace")
    return redacted(text) != text


class Captured(Response):
    """``inner``, sent unchanged; its answer handed to ``keep`` when complete (module doc)."""

    def __init__(
        self,
        inner: Response,
        keep: Keep,
        *,
        now: Callable[[], float],
        limit: int,
        stream: bool,
        complete: Callable[[], bool] = lambda: True,
        meta: Callable[[], dict[str, Any]] = dict,
    ) -> None:
        # Not ``super().__init__``: this response renders nothing of its own.
        self.inner = inner
        self.status_code = inner.status_code
        self.background = None
        self._keep = keep
        self._now = now
        self._limit = limit
        self._stream = stream
        self._complete = complete
        self._meta = meta

    @property
    def headers(self) -> Any:
        """The inner response's headers (a caller may still add to them)."""
        return self.inner.headers

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        status = 0
        headers: list[tuple[str, str]] = []
        parts: list[bytes] = []
        size = 0

        async def tee(message: Message) -> None:
            nonlocal status, headers, size
            if message["type"] == "http.response.start":
                status = int(message["status"])
                headers = [
                    (k.decode("latin-1"), v.decode("latin-1")) for k, v in message["headers"]
                ]
            elif message["type"] == "http.response.body":
                chunk = bytes(message.get("body", b""))
                size += len(chunk)
                if size <= self._limit:
                    parts.append(chunk)
                if not message.get("more_body", False):
                    # Kept before the last message goes out: the client's next request
                    # (on any instance) finds the answer its previous one stored.
                    await self._kept(status, headers, parts, size)
            await send(message)

        await self.inner(scope, receive, tee)

    async def _kept(
        self, status: int, headers: list[tuple[str, str]], parts: list[bytes], size: int
    ) -> None:
        if not (status == 200 and size <= self._limit and self._complete()):
            return
        body = b"".join(parts)
        if carries_secret(body):
            logger.info("an answer shaped like it holds a credential is not stored")
            return
        kept = tuple((k.lower(), v) for k, v in headers if k.lower() in STORED_HEADERS)
        content_type = next((v for k, v in kept if k == "content-type"), "application/json")
        answer = StoredAnswer(
            status=status,
            content_type=content_type,
            body=body,
            stored_at=self._now(),
            headers=tuple((k, v) for k, v in kept if k != "content-type"),
            stream=self._stream,
            meta=self._meta(),
        )
        await self._keep(answer)
