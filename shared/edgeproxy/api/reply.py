"""The first call's answer, kept for its retries: captured from its ``Tee``, replayed as sent.

A minimal stored answer of the idempotency keys' own (kept inside the lease
item, ``state/dynamodb/dynamo_leases``): the status, the headers that
describe the answer (``KEPT_HEADERS``; never a request id or a rate-limit
header), and the body bytes exactly as the client received them (for a
stream: its SSE bytes, replayed as a stream: the request hash holds
``stream`` and ``stream_options``, so a replay always goes to a request that
asked for exactly that stream). It is built only from a complete success:
status 200, the response ended normally, a stream reached its ``Closing``
(``Ending``), at most ``MAX_REPLY_BYTES`` compressed, and nothing in the
body shaped like a credential.

The response cache's stored-answer module (branch cache37) was not committed
when this was built; replacing this module with it is a swap at two calls
(``reply_of``, ``replayed``) and the lease's ``answer`` attribute.
"""

from __future__ import annotations

import json
import zlib
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass

from starlette.responses import Response, StreamingResponse

from edgeproxy.api.tee import Tee
from edgeproxy.service.stream.events import Closing, StreamItem
from edgeproxy.service.usage.capture import redacted

MAX_REPLY_BYTES = 290_000  # compressed; as base64 (4/3) the lease item stays under 400 KB
KEPT_HEADERS = frozenset(
    {"content-type", "x-edgeproxy-deployment", "openai-model", "anthropic-model"}
)
_STREAM_HEADERS = {"cache-control": "no-cache", "x-accel-buffering": "no"}
_EVENT_END = b"\n\n"


class Ending:
    """A relay's events passed through unchanged, noting whether the stream reached its end."""

    def __init__(self, events: AsyncIterator[StreamItem]) -> None:
        self._events = events
        self.closed = False  # the relay sent its ``Closing``: the answer is complete

    def __aiter__(self) -> Ending:
        return self

    async def __anext__(self) -> StreamItem:
        item = await self._events.__anext__()
        if isinstance(item, Closing):
            self.closed = True
        return item

    async def aclose(self) -> None:
        """Close the relay (the response closes its events however it ended)."""
        aclose = getattr(self._events, "aclose", None)
        if aclose is not None:
            await aclose()


@dataclass(frozen=True, slots=True)
class Reply:
    """One complete answer as its client received it."""

    status: int
    headers: tuple[tuple[str, str], ...]
    body: bytes
    stream: bool

    def encoded(self) -> bytes:
        """The reply as one compressed blob (a JSON head, a NUL, the body)."""
        head = json.dumps(
            {
                "status": self.status,
                "headers": [list(h) for h in self.headers],
                "stream": self.stream,
            },
            separators=(",", ":"),
        ).encode()
        return zlib.compress(head + b"\0" + self.body, 6)

    @classmethod
    def decoded(cls, blob: bytes) -> Reply:
        """The inverse of ``encoded``; ``ValueError`` for a blob it did not write."""
        try:
            head, _, body = zlib.decompress(blob).partition(b"\0")
            fields = json.loads(head)
            headers = tuple((str(k), str(v)) for k, v in fields["headers"])
            return cls(int(fields["status"]), headers, body, bool(fields["stream"]))
        except (zlib.error, KeyError, TypeError, ValueError) as exc:
            raise ValueError("not a stored reply") from exc


def reply_of(tee: Tee, *, stream: bool, complete: bool) -> bytes | None:
    """The encoded reply of what ``tee`` recorded, or None if it may not be kept."""
    if tee.error is not None or not complete or not tee.messages:
        return None
    start, body = tee.messages[0], tee.messages[1:]
    ended = bool(body) and not body[-1].get("more_body", False)
    if start.get("type") != "http.response.start" or start.get("status") != 200 or not ended:
        return None
    data = b"".join(bytes(m.get("body", b"")) for m in body)
    if redacted(data.decode("utf-8", errors="replace")) != data.decode("utf-8", errors="replace"):
        return None  # an answer that echoes something shaped like a key is never kept
    headers = tuple(
        (k.decode("latin-1").lower(), v.decode("latin-1"))
        for k, v in start.get("headers", [])
        if k.decode("latin-1").lower() in KEPT_HEADERS
    )
    blob = Reply(200, headers, data, stream).encoded()
    return blob if len(blob) <= MAX_REPLY_BYTES else None


def replayed(blob: bytes, extra: Mapping[str, str]) -> Response:
    """The stored reply as a response, with this request's own ``extra`` headers over it."""
    reply = Reply.decoded(blob)
    headers = {**dict(reply.headers), **extra}
    media = headers.pop("content-type", "application/json")
    if not reply.stream:
        return Response(reply.body, reply.status, headers=headers, media_type=media)

    async def events() -> AsyncIterator[bytes]:
        start = 0
        while (end := reply.body.find(_EVENT_END, start)) >= 0:
            yield reply.body[start : end + len(_EVENT_END)]
            start = end + len(_EVENT_END)
        if start < len(reply.body):
            yield reply.body[start:]

    return StreamingResponse(
        events(), reply.status, headers={**headers, **_STREAM_HEADERS}, media_type=media
    )
