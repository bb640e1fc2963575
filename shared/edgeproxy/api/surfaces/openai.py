"""The OpenAI surface: ``/v1/chat/completions``, ``/v1/completions``, ``/v1/embeddings``.

Bodies are validated shallowly (``parsing``) and forwarded; answers are the
gateway's own; errors are ``errors.error_response``. Streams render as the
OpenAI SSE the SDKs read:

    Chunk      -> data: {chunk}
    Keepalive  -> : keepalive
    Closing    -> a chunk with the finish reasons the upstream left out (if any),
                  a chunk with ``unified_routing`` (if asked), data: [DONE]
    Failed     -> data: {"error": {...}} (the error's public OpenAI body, with
                  ``unified_routing`` beside it if asked)
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from edgeproxy.api.codec import Parsed
from edgeproxy.api.errors import error_response
from edgeproxy.api.parsing import (
    chat_modalities,
    completions_prompt,
    embeddings_input,
    require_model,
    stream_flag,
)
from edgeproxy.config.policies import Operation
from edgeproxy.errors import EdgeproxyError
from edgeproxy.service.stream.events import Chunk, Closing, Failed, Keepalive, StreamItem

KEEPALIVE = b": keepalive\n\n"
DONE = b"data: [DONE]\n\n"
_IDENTITY = ("id", "object", "created", "model")  # what closing chunks repeat of the last one


def sse(payload: dict[str, Any]) -> bytes:
    """One ``data:`` event with compact JSON."""
    return b"data: " + json.dumps(payload, separators=(",", ":")).encode() + b"\n\n"


class OpenAISurface:
    """The codec for one OpenAI operation (chat, legacy completions or embeddings)."""

    surface: str | None = None  # bindings use ``openai.<operation>``

    def __init__(self, operation: Operation) -> None:
        self.operation = operation

    def parse(self, body: dict[str, Any]) -> Parsed:
        """Check what routing needs: ``model``, ``messages``/``prompt``/``input``, ``stream``."""
        model = require_model(body)
        stream = stream_flag(body)
        if self.operation is Operation.CHAT:
            return Parsed(model, body, stream, chat_modalities(body))
        if self.operation is Operation.COMPLETIONS:
            completions_prompt(body)
            return Parsed(model, body, stream, frozenset({"text"}))
        embeddings_input(body)
        # Embeddings have no stream mode; the body is forwarded as-is.
        return Parsed(model, body, False, frozenset({"text"}))

    def headers(self, request_id: str) -> dict[str, str]:
        """``x-request-id``."""
        return {"x-request-id": request_id}

    def answer(self, body: dict[str, Any]) -> dict[str, Any]:
        """Already the OpenAI answer."""
        return body

    def stream(self, events: AsyncIterator[StreamItem]) -> AsyncIterator[bytes]:
        """OpenAI SSE for the relay's events."""
        return openai_sse(events, text=self.operation is Operation.COMPLETIONS)

    def error(self, exc: EdgeproxyError, request: Request) -> Response:
        """OpenAI's error JSON (the surface's one handler, ``errors.error_response``)."""
        return error_response(exc)


async def openai_sse(
    events: AsyncIterator[StreamItem], *, text: bool = False
) -> AsyncIterator[bytes]:
    """Render ``events`` as they arrive; closes them when done or when the client goes away.

    ``text``: the chunks are legacy ``text_completion`` ones (choices carry ``text``).
    """
    last: dict[str, Any] | None = None
    try:
        async for item in events:
            if isinstance(item, Chunk):
                last = item.data
                yield sse(item.data)
            elif isinstance(item, Keepalive):
                yield KEEPALIVE
            elif isinstance(item, Closing):
                for data in closing_frames(item, last, text=text):
                    yield data
            else:
                assert isinstance(item, Failed)
                body = item.error.body()
                if item.routing is not None:
                    body = {**body, "unified_routing": item.routing}
                yield sse(body)
    finally:
        aclose = getattr(events, "aclose", None)
        if aclose is not None:
            await aclose()


def closing_frames(
    closing: Closing, last: dict[str, Any] | None, *, text: bool = False
) -> list[bytes]:
    """The end of a complete stream; ``last`` is the last chunk the client got."""
    base = {k: last[k] for k in _IDENTITY if last and k in last}
    out: list[bytes] = []
    if closing.finish_reasons:
        # The upstream reached its end marker without saying why: say it, as its SDK would.
        empty: dict[str, Any] = {"text": ""} if text else {"delta": {}}
        choices = [
            {"index": i, **empty, "finish_reason": reason}
            for i, reason in sorted(closing.finish_reasons.items())
        ]
        out.append(sse({**base, "choices": choices}))
    if closing.routing is not None:
        out.append(sse({**base, "choices": [], "unified_routing": closing.routing}))
    out.append(DONE)
    return out


CHAT = OpenAISurface(Operation.CHAT)
COMPLETIONS = OpenAISurface(Operation.COMPLETIONS)
EMBEDDINGS = OpenAISurface(Operation.EMBEDDINGS)
