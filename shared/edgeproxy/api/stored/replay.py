"""A stored answer replayed as the ASGI response its first client received.

The cache key holds ``stream`` and ``stream_options`` (``api/stored/key.py``),
so a stored stream is only ever replayed to a request that asked for exactly
that stream: replaying its stored SSE bytes is the surface's own format
(OpenAI chunks with the usage chunk when it was asked, Anthropic events,
Responses events) without rendering anything again. They are sent one SSE
event per body message, as a stream; a JSON answer is one message.
``extra`` are this request's own headers (its request id, ``x-edgeproxy-cache``,
``Age``).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping

from starlette.responses import Response, StreamingResponse

from edgeproxy.state.answers import StoredAnswer

_EVENT_END = b"\n\n"
_STREAM_HEADERS = {"cache-control": "no-cache", "x-accel-buffering": "no"}


def events(body: bytes) -> list[bytes]:
    """``body`` cut after each SSE event's blank line (joined, they are ``body`` again)."""
    out: list[bytes] = []
    start = 0
    while (end := body.find(_EVENT_END, start)) >= 0:
        out.append(body[start : end + len(_EVENT_END)])
        start = end + len(_EVENT_END)
    if start < len(body):
        out.append(body[start:])
    return out


def replayed(answer: StoredAnswer, extra: Mapping[str, str]) -> Response:
    """``answer`` as a response, with ``extra`` headers over the stored ones."""
    headers = {**dict(answer.headers), **extra}
    if not answer.stream:
        return Response(answer.body, answer.status, headers=headers, media_type=answer.content_type)

    async def body() -> AsyncIterator[bytes]:
        for event in events(answer.body):
            yield event

    return StreamingResponse(
        body(),
        answer.status,
        headers={**headers, **_STREAM_HEADERS},
        media_type=answer.content_type,
    )
