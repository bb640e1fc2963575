"""The relay's typed stream events, rendered as an Anthropic Messages event stream.

first Chunk                 -> message_start (input tokens: the upstream's own count
                               when it reported one by then, an Anthropic upstream's
                               message_start; otherwise the gateway's estimate,
                               ``messages_tokens.estimate``, marked
                               ``edgeproxy_estimated``; message_delta carries what
                               the request log counts: the upstream's count, else
                               the gateway's estimate, marked so)
delta.content               -> content_block_start (text) + content_block_delta text_delta
delta.tool_calls[i]         -> content_block_start (tool_use) + input_json_delta
finish_reason               -> remembered for message_delta
Closing                     -> content_block_stop, message_delta (usage), message_stop
Failed                      -> event: error (with ``unified_routing`` if asked; nothing after it)
Keepalive                   -> the SSE comment ``: keepalive``
"""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator, Mapping
from typing import Any

from edgeproxy.api.stream import UNFINISHED, Renderer, drive
from edgeproxy.api.surfaces.messages_answer import error_body, error_json, stop_reason
from edgeproxy.errors import EdgeproxyError
from edgeproxy.service.stream.events import ESTIMATED, Chunk, Closing, Failed, StreamItem, Usage


def event(kind: str, payload: Mapping[str, Any]) -> bytes:
    """One Anthropic SSE event: ``event: <type>`` and its JSON data."""
    data = json.dumps(payload, separators=(",", ":"))
    return f"event: {kind}\ndata: {data}\n\n".encode()


class MessageEvents(Renderer):
    """Stateful renderer for one stream; feed it events, then ``close()`` at the end."""

    def __init__(self, prompt_estimate: int | None = None) -> None:
        super().__init__()
        self._estimate = prompt_estimate
        self._reported: Usage | None = None  # the upstream's input tokens, once it said
        self._started = False
        self._id = ""
        self._model = ""
        self._count = 0  # content blocks opened so far
        self._open: int | None = None  # index of the open block
        self._text: int | None = None  # index of the open block if it is text
        self._tools: dict[int, int] = {}  # OpenAI tool_calls index -> block index
        self._finish: Any = None

    def feed(self, item: StreamItem) -> list[bytes]:
        if isinstance(item, Chunk) and item.reported is not None:
            self._reported = item.reported
        return super().feed(item)

    def closing(self, item: Closing) -> list[bytes]:
        return self._end(item)

    def failed(self, item: Failed) -> list[bytes]:
        return self._error(item.error, item.routing)

    def unfinished(self) -> list[bytes]:
        return [event("error", error_body("api_error", UNFINISHED))]

    def chunk(self, chunk: Mapping[str, Any]) -> list[bytes]:
        out = self._start(chunk)
        for choice in chunk.get("choices") or []:
            if isinstance(choice, dict) and choice.get("index", 0) == 0:
                out.extend(self._delta(choice.get("delta") or {}))
                self._finish = choice.get("finish_reason") or self._finish
        return out

    def _start(self, chunk: Mapping[str, Any]) -> list[bytes]:
        if self._started:
            return []
        self._started = True
        self._id = str(chunk.get("id") or f"msg_{uuid.uuid4().hex[:24]}")
        self._model = str(chunk.get("model") or "")
        message: dict[str, Any] = {
            "id": self._id,
            "type": "message",
            "role": "assistant",
            "model": self._model,
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": self._start_usage(),
        }
        return [event("message_start", {"type": "message_start", "message": message})]

    def _start_usage(self) -> dict[str, Any]:
        """What message_start reports: the upstream's count, else the (marked) estimate."""
        if self._reported is not None:
            return {**self._reported.anthropic_fields(), "output_tokens": 0}
        return {"input_tokens": self._estimate or 0, "output_tokens": 0, ESTIMATED: True}

    def _delta(self, delta: Mapping[str, Any]) -> list[bytes]:
        out: list[bytes] = []
        for key in ("content", "refusal"):
            text = delta.get(key)
            if isinstance(text, str) and text:
                index = self._text
                if index is None:
                    out += self._open_block({"type": "text", "text": ""})
                    index = self._text = self._count - 1
                out.append(_block_delta(index, {"type": "text_delta", "text": text}))
        for call in delta.get("tool_calls") or []:
            out += self._tool_delta(call)
        return out

    def _tool_delta(self, call: Mapping[str, Any]) -> list[bytes]:
        out: list[bytes] = []
        position = int(call.get("index") or 0)
        function = call.get("function") or {}
        if position not in self._tools:
            block: dict[str, Any] = {
                "type": "tool_use",
                "id": call.get("id") or f"toolu_{uuid.uuid4().hex[:24]}",
                "name": function.get("name") or "",
                "input": {},
            }
            out += self._open_block(block)
            self._tools[position] = self._count - 1
        arguments = function.get("arguments")
        if isinstance(arguments, str) and arguments:
            # OpenAI sends one call's fragments together; if a server interleaves
            # calls, the delta still names its own block, as the SDKs accumulate.
            payload = {"type": "input_json_delta", "partial_json": arguments}
            out.append(_block_delta(self._tools[position], payload))
        return out

    def _open_block(self, block: Mapping[str, Any]) -> list[bytes]:
        out = self._close_block()
        self._open = self._count
        self._count += 1
        start = {"type": "content_block_start", "index": self._open, "content_block": block}
        out.append(event("content_block_start", start))
        return out

    def _close_block(self) -> list[bytes]:
        if self._open is None:
            return []
        index, self._open, self._text = self._open, None, None
        return [event("content_block_stop", {"type": "content_block_stop", "index": index})]

    def _end(self, closing: Closing) -> list[bytes]:
        out = self._start({}) + self._close_block()
        # An inferred reason fills in only where the upstream stated none.
        finish = self._finish or closing.finish_reasons.get(0)
        usage = closing.shown_usage  # the upstream's count, else what the log counts
        delta: dict[str, Any] = {
            "type": "message_delta",
            "delta": {"stop_reason": stop_reason(finish), "stop_sequence": None},
            "usage": closing.marked(
                {
                    **(usage or Usage()).anthropic_fields(),
                    "output_tokens": usage.completion_tokens if usage else 0,
                }
            ),
        }
        if closing.routing is not None:
            delta["unified_routing"] = closing.routing
        out.append(event("message_delta", delta))
        out.append(event("message_stop", {"type": "message_stop"}))
        return out

    def _error(self, error: EdgeproxyError, routing: Mapping[str, Any] | None) -> list[bytes]:
        # In-band: the HTTP status is long sent, so the type comes from the error itself.
        payload: dict[str, Any] = dict(error_json(error, None))
        if routing is not None:
            payload["unified_routing"] = routing
        return [event("error", payload)]


def _block_delta(index: int, delta: Mapping[str, Any]) -> bytes:
    return event(
        "content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta}
    )


def message_stream(
    source: AsyncIterator[StreamItem], prompt_estimate: int | None = None
) -> AsyncIterator[bytes]:
    """Render ``source`` (the relay's events) as Anthropic's stream (``api/stream.py``).

    ``prompt_estimate``: message_start's input tokens when the upstream reports none first.
    """
    return drive(source, MessageEvents(prompt_estimate))
