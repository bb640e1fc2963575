"""The OpenAI surface: ``/v1/chat/completions``, ``/v1/completions``, ``/v1/embeddings``.

Bodies are validated shallowly (``parsing``) and forwarded; answers are the
gateway's own; errors are ``errors.error_response``. Streams render as the
OpenAI SSE the SDKs read:

    Chunk      -> data: {chunk}
    Keepalive  -> : keepalive
    Closing    -> a chunk with the finish reasons the upstream left out (if any),
                  the usage chunk the client asked for (``stream_options.include_usage``)
                  when the upstream sent none: the counted estimate, marked
                  ``edgeproxy_estimated``; a chunk with ``unified_routing`` (if asked),
                  data: [DONE]
    Failed     -> data: {"error": {...}} (the error's public OpenAI body, with
                  ``unified_routing`` beside it if asked)
    (neither)  -> data: {"error": {"type": "server_error", ...}}: it ended unfinished
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
    tools_shape,
)
from edgeproxy.api.rate_headers import OPENAI_RATES
from edgeproxy.api.stream import UNFINISHED, Renderer, drive
from edgeproxy.config.policies import Operation
from edgeproxy.errors import EdgeproxyError
from edgeproxy.service.stream.events import Closing, Failed, StreamItem

DONE = b"data: [DONE]\n\n"
_IDENTITY = ("id", "object", "created", "model")  # what closing chunks repeat of the last one


def sse(payload: dict[str, Any]) -> bytes:
    """One ``data:`` event with compact JSON."""
    return b"data: " + json.dumps(payload, separators=(",", ":")).encode() + b"\n\n"


class OpenAISurface:
    """The codec for one OpenAI operation (chat, legacy completions or embeddings)."""

    surface: str | None = None  # bindings use ``openai.<operation>``
    rate_names = OPENAI_RATES

    def __init__(self, operation: Operation) -> None:
        self.operation = operation

    def parse(self, body: dict[str, Any]) -> Parsed:
        """Check what routing needs: ``model``, ``messages``/``prompt``/``input``, ``stream``."""
        model = require_model(body)
        stream = stream_flag(body)
        tools_shape(body)
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

    def answer(self, body: dict[str, Any], now: float) -> dict[str, Any]:
        """Already the OpenAI answer."""
        return body

    def stream(
        self, events: AsyncIterator[StreamItem], parsed: Parsed, now: float
    ) -> AsyncIterator[bytes]:
        """OpenAI SSE for the relay's events."""
        text = self.operation is Operation.COMPLETIONS
        options = parsed.body.get("stream_options")
        asked = isinstance(options, dict) and options.get("include_usage") is True
        return openai_sse(events, text=text, usage=asked)

    def error(self, exc: EdgeproxyError, request: Request) -> Response:
        """OpenAI's error JSON (the surface's one handler, ``errors.error_response``)."""
        return error_response(exc)


class OpenAIEvents(Renderer):
    """OpenAI SSE for one stream; ``text``: the chunks are legacy ``text_completion`` ones."""

    def __init__(self, *, text: bool = False, usage: bool = False) -> None:
        super().__init__()
        self._text = text
        self._owed_usage = usage  # the client asked for a usage chunk and has none yet
        self._last: dict[str, Any] | None = None  # the last chunk the client got

    def chunk(self, data: dict[str, Any]) -> list[bytes]:
        self._last = data
        if data.get("usage") is not None:
            self._owed_usage = False
        return [sse(data)]

    def closing(self, item: Closing) -> list[bytes]:
        return closing_frames(item, self._last, text=self._text, usage=self._owed_usage)

    def failed(self, item: Failed) -> list[bytes]:
        body = item.error.body()
        if item.routing is not None:
            body = {**body, "unified_routing": item.routing}
        return [sse(body)]

    def unfinished(self) -> list[bytes]:
        error = {"message": UNFINISHED, "type": "server_error", "param": None, "code": None}
        return [sse({"error": error})]


def openai_sse(
    events: AsyncIterator[StreamItem], *, text: bool = False, usage: bool = False
) -> AsyncIterator[bytes]:
    """Render ``events`` as they arrive (``api/stream.py``); closes them when done or abandoned.

    ``text``: the chunks are legacy ``text_completion`` ones (choices carry ``text``);
    ``usage``: the client asked for the final usage chunk.
    """
    return drive(events, OpenAIEvents(text=text, usage=usage))


def closing_frames(
    closing: Closing, last: dict[str, Any] | None, *, text: bool = False, usage: bool = False
) -> list[bytes]:
    """The end of a complete stream; ``last`` is the last chunk the client got.

    ``usage``: a usage chunk is owed (asked for, and the upstream sent none).
    """
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
    shown = closing.shown_usage
    if usage and shown is not None:
        counted = shown.openai_fields()
        out.append(sse({**base, "choices": [], "usage": closing.marked(counted)}))
    if closing.routing is not None:
        out.append(sse({**base, "choices": [], "unified_routing": closing.routing}))
    out.append(DONE)
    return out


CHAT = OpenAISurface(Operation.CHAT)
COMPLETIONS = OpenAISurface(Operation.COMPLETIONS)
EMBEDDINGS = OpenAISurface(Operation.EMBEDDINGS)
