"""Anthropic Messages stream events, translated to OpenAI ``chat.completion.chunk``s.

message_start            -> first chunk: delta {"role": "assistant", "content": ""}
content_block_start      -> tool_use: a tool_calls delta with id and name
content_block_delta      -> text_delta: content; input_json_delta: tool arguments
message_delta            -> a chunk with finish_reason (and the output usage)
message_stop             -> the end marker, after a usage-only chunk (``choices: []``,
                            the tokens Anthropic reported) when the client asked for
                            one (``stream_options.include_usage``)
ping, content_block_stop -> nothing
error                    -> UpstreamFault (HTTP), as the provider meant it
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from edgeproxy.upstream.call import DONE, StreamEvent, Usage
from edgeproxy.upstream.errors import stream_error_fault
from edgeproxy.upstream.openai import parse_json_object
from edgeproxy.upstream.sse import ServerSentEvent

FINISH_REASONS = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "max_tokens": "length",
    "tool_use": "tool_calls",
    "pause_turn": "stop",
    "refusal": "content_filter",
}


class AnthropicChunks:
    """Stateful translator for one stream: remembers id, model and tool indices."""

    def __init__(
        self, created: int, secrets: Sequence[str | None], *, include_usage: bool = False
    ) -> None:
        self._created = created
        self._include_usage = include_usage
        self._secrets = secrets
        self._id = ""
        self._model = ""
        self._tools: dict[int, int] = {}  # content block index -> OpenAI tool_calls index
        self._input: Mapping[str, Any] = {}  # message_start's usage (input and cache counts)
        self.usage: Usage | None = None

    def feed(self, event: ServerSentEvent) -> list[StreamEvent]:
        """The chunks for one Anthropic event (the ``type`` in its data wins)."""
        payload = parse_json_object(event.data, "stream event")
        kind = payload.get("type", event.event)
        if kind == "message_start":
            return [self._start(payload.get("message") or {})]
        if kind == "content_block_start":
            return self._block_start(payload)
        if kind == "content_block_delta":
            return self._block_delta(payload)
        if kind == "message_delta":
            return [self._message_delta(payload)]
        if kind == "message_stop":
            return [*self._usage_chunk(), DONE]
        if kind == "error":
            raise stream_error_fault(payload, self._secrets)
        return []

    def _start(self, message: dict[str, Any]) -> StreamEvent:
        self._id = str(message.get("id", ""))
        self._model = str(message.get("model", ""))
        usage = message.get("usage")
        self._input = usage if isinstance(usage, Mapping) else {}
        self.usage = Usage.from_anthropic(self._input)
        return self._chunk({"role": "assistant", "content": ""})

    def _block_start(self, payload: dict[str, Any]) -> list[StreamEvent]:
        block = payload.get("content_block") or {}
        if block.get("type") == "tool_use":
            index = len(self._tools)
            self._tools[int(payload.get("index", 0))] = index
            call = {
                "index": index,
                "id": block.get("id"),
                "type": "function",
                "function": {"name": block.get("name"), "arguments": ""},
            }
            return [self._chunk({"tool_calls": [call]})]
        if block.get("type") == "text" and block.get("text"):
            return [self._chunk({"content": block["text"]})]
        return []

    def _block_delta(self, payload: dict[str, Any]) -> list[StreamEvent]:
        delta = payload.get("delta") or {}
        if delta.get("type") == "text_delta":
            return [self._chunk({"content": delta.get("text", "")})]
        if delta.get("type") == "input_json_delta":
            index = self._tools.get(int(payload.get("index", 0)), 0)
            call = {"index": index, "function": {"arguments": delta.get("partial_json", "")}}
            return [self._chunk({"tool_calls": [call]})]
        return []  # thinking and signature deltas have no chat.completion equivalent

    def _message_delta(self, payload: dict[str, Any]) -> StreamEvent:
        stop_reason = (payload.get("delta") or {}).get("stop_reason")
        usage = payload.get("usage") or {}
        output = usage.get("output_tokens")
        if isinstance(output, int):
            # message_delta's counts are cumulative and may restate the input side.
            self.usage = Usage.from_anthropic({**self._input, **usage}, output)
        return self._chunk({}, FINISH_REASONS.get(stop_reason or ""))

    def _usage_chunk(self) -> list[StreamEvent]:
        """OpenAI's final ``include_usage`` chunk, when asked for and Anthropic reported usage."""
        if not self._include_usage or self.usage is None:
            return []
        usage = self.usage
        chunk = self._chunk({}).chunk or {}
        chunk["choices"] = []
        chunk["usage"] = usage.openai_fields()
        return [StreamEvent(chunk=chunk)]

    def _chunk(self, delta: dict[str, Any], finish_reason: str | None = None) -> StreamEvent:
        return StreamEvent(
            chunk={
                "id": self._id,
                "object": "chat.completion.chunk",
                "created": self._created,
                "model": self._model,
                "choices": [
                    {"index": 0, "delta": delta, "finish_reason": finish_reason, "logprobs": None}
                ],
            }
        )
