"""The gateway's OpenAI SSE stream, rewritten as an Anthropic Messages event stream.

    first data chunk            -> message_start
    delta.content               -> content_block_start (text) + content_block_delta text_delta
    delta.tool_calls[i]         -> content_block_start (tool_use) + input_json_delta
    finish_reason / usage chunk -> remembered for message_delta
    data: [DONE]                -> content_block_stop, message_delta, message_stop
    data: {"error": {...}}      -> event: error (and nothing after it)
    : comment (keepalive)       -> passed through unchanged

The input bytes may be split anywhere; only complete events are translated.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import AsyncIterator, Mapping
from typing import Any

from edgeproxy.api.messages_answer import error_body, from_openai_error, stop_reason

_BOUNDARY = re.compile(rb"\r?\n\r?\n")
_LINE = re.compile(r"\r?\n")


def event(kind: str, payload: Mapping[str, Any]) -> bytes:
    """One Anthropic SSE event: ``event: <type>`` and its JSON data."""
    data = json.dumps(payload, separators=(",", ":"))
    return f"event: {kind}\ndata: {data}\n\n".encode()


class EventBlocks:
    """Splits an SSE byte stream into its raw events (comments and data, in order)."""

    def __init__(self) -> None:
        self._buffer = b""

    def feed(self, chunk: bytes) -> list[tuple[str, str]]:
        """``("comment", line)`` and ``("data", text)`` items completed by ``chunk``."""
        self._buffer += chunk
        items: list[tuple[str, str]] = []
        while (found := _BOUNDARY.search(self._buffer)) is not None:
            block, self._buffer = self._buffer[: found.start()], self._buffer[found.end() :]
            data: list[str] = []
            for line in _LINE.split(block.decode("utf-8", errors="replace")):
                if line.startswith(":"):
                    items.append(("comment", line))
                elif line.startswith("data:"):
                    data.append(line[5:].removeprefix(" "))
            if data:
                items.append(("data", "\n".join(data)))
        return items


class MessageEvents:
    """Stateful translator for one stream; feed it bytes, then ``close()`` at the end."""

    def __init__(self) -> None:
        self._blocks = EventBlocks()
        self._started = False
        self._ended = False
        self._id = ""
        self._model = ""
        self._count = 0  # content blocks opened so far
        self._open: int | None = None  # index of the open block
        self._text: int | None = None  # index of the open block if it is text
        self._tools: dict[int, int] = {}  # OpenAI tool_calls index -> block index
        self._finish: Any = None
        self._usage: dict[str, int] = {"input_tokens": 0, "output_tokens": 0}
        self._routing: Any = None

    def feed(self, chunk: bytes) -> list[bytes]:
        """The Anthropic events for the complete SSE events ``chunk`` finishes."""
        out: list[bytes] = []
        for kind, text in self._blocks.feed(chunk):
            if self._ended:
                break
            if kind == "comment":
                out.append(text.encode() + b"\n\n")
            else:
                out.extend(self._data(text))
        return out

    def close(self) -> list[bytes]:
        """Events owed when the source ends: an error if it ended without its end marker."""
        if self._ended:
            return []
        return self._error(error_body("api_error", "The stream ended before it was complete."))

    def _data(self, text: str) -> list[bytes]:
        if text.strip() == "[DONE]":
            return self._end()
        try:
            chunk = json.loads(text)
        except ValueError:
            chunk = None
        if not isinstance(chunk, dict):
            return self._error(error_body("api_error", "The stream carried an unreadable event."))
        if isinstance(chunk.get("error"), dict):
            return self._error(from_openai_error(chunk["error"]))
        out = self._start(chunk)
        usage = chunk.get("usage")
        if isinstance(usage, dict):
            self._usage = {
                "input_tokens": int(usage.get("prompt_tokens") or 0),
                "output_tokens": int(usage.get("completion_tokens") or 0),
            }
        if "unified_routing" in chunk:
            self._routing = chunk["unified_routing"]
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
            "usage": {"input_tokens": 0, "output_tokens": 0},
        }
        return [event("message_start", {"type": "message_start", "message": message})]

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

    def _end(self) -> list[bytes]:
        out = self._start({}) + self._close_block()
        delta: dict[str, Any] = {
            "type": "message_delta",
            "delta": {"stop_reason": stop_reason(self._finish), "stop_sequence": None},
            "usage": self._usage,
        }
        if self._routing is not None:
            delta["unified_routing"] = self._routing
        out.append(event("message_delta", delta))
        out.append(event("message_stop", {"type": "message_stop"}))
        self._ended = True
        return out

    def _error(self, body: Mapping[str, Any]) -> list[bytes]:
        self._ended = True
        return [event("error", body)]


def _block_delta(index: int, delta: Mapping[str, Any]) -> bytes:
    return event(
        "content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta}
    )


async def message_stream(source: AsyncIterator[bytes]) -> AsyncIterator[bytes]:
    """Translate ``source`` (the gateway's OpenAI SSE bytes) as it arrives.

    Closes ``source`` when done or when the client goes away, so the relay
    settles the upstream attempt (success, failure or abandon) at once.
    """
    events = MessageEvents()
    try:
        async for chunk in source:
            for data in events.feed(chunk):
                yield data
        for data in events.close():
            yield data
    finally:
        aclose = getattr(source, "aclose", None)
        if aclose is not None:
            await aclose()
