"""The relay's typed stream events, rendered as a Responses API event stream.

Translated (the chunks are chat chunks):

first Chunk            -> response.created, response.in_progress
delta.content          -> output_item.added (message) + content_part.added, then
                          response.output_text.delta (refusal text too)
delta.tool_calls[i]    -> output_item.added (function_call), then
                          response.function_call_arguments.delta
finish_reason          -> remembered for the terminal event
Closing                -> for each item in order: output_text.done + content_part.done or
                          function_call_arguments.done, then output_item.done; then
                          response.completed (or response.incomplete for length /
                          content_filter) with the whole response and its usage

Native (the chunks are already Responses API events, from a deployment that
serves ``/v1/responses``): each is passed on as it is; the terminal event is
held until the relay's Closing, which adds ``unified_routing`` when asked.

Failed                 -> ``error`` then ``response.failed`` (nothing after them)
Keepalive              -> the SSE comment ``: keepalive``
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Mapping
from typing import Any

from edgeproxy.api.stream import UNFINISHED, Renderer, drive
from edgeproxy.api.surfaces.responses_answer import (
    call_item,
    message_item,
    new_id,
    response_object,
    status_of,
    usage_object,
)
from edgeproxy.errors import EdgeproxyError
from edgeproxy.routing.stream.completeness import TERMINAL_EVENTS
from edgeproxy.service.stream.events import Closing, Failed, StreamItem


class ResponseEvents(Renderer):
    """Stateful renderer for one stream; feed it events, then ``close()`` at the end."""

    def __init__(self, now: float) -> None:
        super().__init__()
        self._now = int(now)  # ``created_at`` when the chunks carry no ``created``
        self._seq = 0
        self._started = False
        self._id = new_id("resp")
        self._model: Any = ""
        self._created = self._now
        self._items: list[dict[str, Any]] = []  # output items as they stand
        self._text: int | None = None  # output index of the message item
        self._tools: dict[int, int] = {}  # chat tool_calls index -> output index
        self._finish: Any = None
        self._native: dict[str, Any] | None = None  # a native stream's latest response object
        self._held: dict[str, Any] | None = None  # a native stream's terminal event

    def event(self, kind: str, data: dict[str, Any]) -> list[bytes]:
        return self._passed(kind, data)

    def closing(self, item: Closing) -> list[bytes]:
        return self._end(item)

    def failed(self, item: Failed) -> list[bytes]:
        return self._error(item.error, item.routing)

    def unfinished(self) -> list[bytes]:
        return self._failure("server_error", UNFINISHED, None, None)

    def _event(self, kind: str, payload: Mapping[str, Any]) -> bytes:
        data = {"type": kind, **payload, "sequence_number": self._seq}
        self._seq += 1
        return _sse(kind, data)

    def _response(self, status: str, **extra: Any) -> dict[str, Any]:
        return response_object(
            self._id, self._model, status, list(self._items), created_at=self._created, **extra
        )

    # Native: pass through.

    def _passed(self, kind: str, event: dict[str, Any]) -> list[bytes]:
        response = event.get("response")
        if isinstance(response, dict):
            self._native = response
        number = event.get("sequence_number")
        if isinstance(number, int) and not isinstance(number, bool):
            self._seq = max(self._seq, number + 1)
        if kind in TERMINAL_EVENTS:
            self._held = event
            return []
        return [_sse(kind, event)]

    # Translated: chat chunks become Responses events.

    def chunk(self, chunk: Mapping[str, Any]) -> list[bytes]:
        out = self._start(chunk)
        for choice in chunk.get("choices") or []:
            if isinstance(choice, Mapping) and choice.get("index", 0) == 0:
                delta = choice.get("delta") or {}
                for key in ("content", "refusal"):
                    text = delta.get(key)
                    if isinstance(text, str) and text:
                        out += self._text_delta(text)
                for call in delta.get("tool_calls") or []:
                    if isinstance(call, Mapping):
                        out += self._tool_delta(call)
                self._finish = choice.get("finish_reason") or self._finish
        return out

    def _start(self, chunk: Mapping[str, Any]) -> list[bytes]:
        if self._started:
            return []
        self._started = True
        self._model = chunk.get("model") or ""
        created = chunk.get("created")
        self._created = created if isinstance(created, int) else self._now
        response = self._response("in_progress")
        return [
            self._event("response.created", {"response": response}),
            self._event("response.in_progress", {"response": response}),
        ]

    def _text_delta(self, text: str) -> list[bytes]:
        out: list[bytes] = []
        if self._text is None:
            self._text = len(self._items)
            item = message_item(new_id("msg"), "", "in_progress")
            part = item["content"][0]
            self._items.append(item)
            added = {"output_index": self._text, "item": {**item, "content": []}}
            out.append(self._event("response.output_item.added", added))
            where = {"item_id": item["id"], "output_index": self._text, "content_index": 0}
            out.append(self._event("response.content_part.added", {**where, "part": part}))
        item = self._items[self._text]
        item["content"][0]["text"] += text
        where = {"item_id": item["id"], "output_index": self._text, "content_index": 0}
        payload = {**where, "delta": text, "logprobs": []}
        out.append(self._event("response.output_text.delta", payload))
        return out

    def _tool_delta(self, call: Mapping[str, Any]) -> list[bytes]:
        out: list[bytes] = []
        position = int(call.get("index") or 0)
        function = call.get("function") or {}
        if position not in self._tools:
            self._tools[position] = len(self._items)
            call_id = str(call.get("id") or new_id("call"))
            item = call_item(
                new_id("fc"), call_id, str(function.get("name") or ""), "", "in_progress"
            )
            self._items.append(item)
            added = {"output_index": self._tools[position], "item": dict(item)}
            out.append(self._event("response.output_item.added", added))
        index = self._tools[position]
        item = self._items[index]
        arguments = function.get("arguments")
        if isinstance(arguments, str) and arguments:
            item["arguments"] += arguments
            payload = {"item_id": item["id"], "output_index": index, "delta": arguments}
            out.append(self._event("response.function_call_arguments.delta", payload))
        return out

    def _end(self, closing: Closing) -> list[bytes]:
        if self._native is not None or self._held is not None:
            return self._native_end(closing)
        out = self._start({})
        status, incomplete = status_of(self._finish or closing.finish_reasons.get(0))
        for index, item in enumerate(self._items):
            item["status"] = "completed" if status == "completed" else "incomplete"
            out += self._item_done(index, item)
        extra: dict[str, Any] = {
            "usage": _usage(closing),
            "incomplete": incomplete,
        }
        response = self._response(status, **extra)
        if closing.routing is not None:
            response["unified_routing"] = closing.routing
        kind = "response.completed" if status == "completed" else "response.incomplete"
        out.append(self._event(kind, {"response": response}))
        return out

    def _item_done(self, index: int, item: dict[str, Any]) -> list[bytes]:
        where = {"item_id": item["id"], "output_index": index}
        out: list[bytes] = []
        if item["type"] == "message":
            part = item["content"][0]
            text = {**where, "content_index": 0, "text": part["text"], "logprobs": []}
            out.append(self._event("response.output_text.done", text))
            out.append(
                self._event(
                    "response.content_part.done", {**where, "content_index": 0, "part": part}
                )
            )
        else:
            done = {**where, "name": item["name"], "arguments": item["arguments"]}
            out.append(self._event("response.function_call_arguments.done", done))
        out.append(self._event("response.output_item.done", {"output_index": index, "item": item}))
        return out

    def _native_end(self, closing: Closing) -> list[bytes]:
        event = self._held
        if event is None:  # complete by the judge's rules; say so in the protocol's words
            response = {**(self._native or self._response("in_progress")), "status": "completed"}
            event = {"type": "response.completed", "response": response}
            event["sequence_number"] = self._seq
        if closing.routing is not None:
            response = dict(event.get("response") or {})
            response["unified_routing"] = closing.routing
            event = {**event, "response": response}
        return [_sse(str(event["type"]), event)]

    def _error(self, error: EdgeproxyError, routing: Mapping[str, Any] | None) -> list[bytes]:
        # In-band: the HTTP status is long sent, so the error says what happened.
        body = error.body()["error"]
        assert isinstance(body, dict)  # body() always builds this object; it also hides secrets
        code = str(body.get("code") or body.get("type") or "server_error")
        message = str(body.get("message") or "The request failed.")
        return self._failure(code, message, body.get("param"), routing)

    def _failure(
        self, code: str, message: str, param: Any, routing: Mapping[str, Any] | None
    ) -> list[bytes]:
        out = [self._event("error", {"code": code, "message": message, "param": param})]
        if self._native is not None:
            self._id = str(self._native.get("id") or self._id)
            self._model = self._native.get("model") or self._model
        for item in self._items:
            item["status"] = "incomplete"
        response = self._response("failed", error={"code": code, "message": message})
        if routing is not None:
            response["unified_routing"] = dict(routing)
        out.append(self._event("response.failed", {"response": response}))
        return out


def _sse(kind: str, payload: Mapping[str, Any]) -> bytes:
    data = json.dumps(payload, separators=(",", ":"))
    return f"event: {kind}\ndata: {data}\n\n".encode()


def response_stream(source: AsyncIterator[StreamItem], now: float) -> AsyncIterator[bytes]:
    """Render ``source`` (the relay's events), opened at ``now``, as a Responses API stream
    (``api/stream.py``)."""
    return drive(source, ResponseEvents(now))


def _usage(closing: Closing) -> dict[str, Any] | None:
    """``response.completed``'s usage: the upstream's, else the (marked) counted estimate."""
    shown = usage_object(closing.shown_usage)
    return None if shown is None else closing.marked(shown)
