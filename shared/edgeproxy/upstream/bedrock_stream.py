"""Bedrock ConverseStream events, translated to OpenAI ``chat.completion.chunk``s.

    messageStart               -> first chunk: delta {"role": "assistant", "content": ""}
    contentBlockStart toolUse  -> a tool_calls delta with id and name
    contentBlockDelta          -> text: content; toolUse.input: tool arguments
    messageStop                -> a chunk with finish_reason
    metadata                   -> usage (a usage-only chunk if the client asked for
                                  one with stream_options), then the end marker
    contentBlockStop, reasoningContent deltas and anything new -> nothing
    an exception event         -> UpstreamFault (HTTP), raised by botocore, mapped in
                                  bedrock_errors

``BedrockSource`` is the ``StreamSource`` that reads botocore's parsed
events; deadlines and completeness are ``UpstreamStream``'s, as for SSE.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any

from edgeproxy.config.models import UpstreamLimits
from edgeproxy.errors import UpstreamFault
from edgeproxy.routing.faults import FaultKind
from edgeproxy.upstream.bedrock_convert import finish_reason, usage_of
from edgeproxy.upstream.bedrock_errors import translate_bedrock_errors
from edgeproxy.upstream.call import DONE, StreamEvent, Usage
from edgeproxy.upstream.errors import STREAM, fault

_DRAIN_S = 1.0


class BedrockChunks:
    """Stateful translator for one stream: remembers the tool indices and the usage."""

    def __init__(self, chunk_id: str, model: str, created: int, include_usage: bool) -> None:
        self._id = chunk_id
        self._model = model
        self._created = created
        self._include_usage = include_usage
        self._tools: dict[int, int] = {}  # contentBlockIndex -> OpenAI tool_calls index
        self.usage: Usage | None = None

    def feed(self, event: Mapping[str, Any]) -> list[StreamEvent]:
        """The chunks for one parsed event (``{"contentBlockDelta": {...}}``)."""
        if "messageStart" in event:
            return [self._chunk({"role": "assistant", "content": ""})]
        if "contentBlockStart" in event:
            return self._block_start(event["contentBlockStart"])
        if "contentBlockDelta" in event:
            return self._block_delta(event["contentBlockDelta"])
        if "messageStop" in event:
            stop = (event["messageStop"] or {}).get("stopReason")
            return [self._chunk({}, finish_reason(stop) or "stop")]
        if "metadata" in event:
            return self._metadata(event["metadata"] or {})
        return []

    def _block_start(self, payload: Mapping[str, Any]) -> list[StreamEvent]:
        use = (payload.get("start") or {}).get("toolUse")
        if not isinstance(use, Mapping):
            return []
        index = len(self._tools)
        self._tools[_index(payload)] = index
        call = {
            "index": index,
            "id": use.get("toolUseId"),
            "type": "function",
            "function": {"name": use.get("name"), "arguments": ""},
        }
        return [self._chunk({"tool_calls": [call]})]

    def _block_delta(self, payload: Mapping[str, Any]) -> list[StreamEvent]:
        delta = payload.get("delta") or {}
        if isinstance(delta.get("text"), str):
            return [self._chunk({"content": delta["text"]})]
        use = delta.get("toolUse")
        if isinstance(use, Mapping):
            index = self._tools.get(_index(payload))
            if index is None:
                raise fault(FaultKind.MALFORMED, "a tool-use delta came without its block start")
            call = {"index": index, "function": {"arguments": str(use.get("input", ""))}}
            return [self._chunk({"tool_calls": [call]})]
        return []  # reasoning and citations have no chat.completion equivalent

    def _metadata(self, payload: Mapping[str, Any]) -> list[StreamEvent]:
        self.usage = usage_of(payload.get("usage"))
        out: list[StreamEvent] = []
        if self._include_usage:
            chunk = self._chunk({}).chunk or {}
            chunk["choices"] = []
            chunk["usage"] = self.usage.openai_fields()
            out.append(StreamEvent(chunk=chunk))
        return [*out, DONE]

    def _chunk(self, delta: dict[str, Any], reason: str | None = None) -> StreamEvent:
        return StreamEvent(
            chunk={
                "id": self._id,
                "object": "chat.completion.chunk",
                "created": self._created,
                "model": self._model,
                "choices": [
                    {"index": 0, "delta": delta, "finish_reason": reason, "logprobs": None}
                ],
            }
        )


def _index(payload: Mapping[str, Any]) -> int:
    index = payload.get("contentBlockIndex", 0)
    return index if isinstance(index, int) else 0


class BedrockSource:
    """A ``StreamSource`` over the ``stream`` of a ``converse_stream`` answer."""

    def __init__(
        self,
        stream: Any,
        translator: BedrockChunks,
        limits: UpstreamLimits,
        secrets: Sequence[str | None],
    ) -> None:
        self._stream = stream  # aiobotocore's AioEventStream
        self._events: AsyncIterator[Mapping[str, Any]] = aiter(stream)
        self._translator = translator
        self._max_bytes = limits.stream_bytes
        self._received = 0
        self._secrets = secrets
        self._closed = False

    @property
    def usage(self) -> Usage | None:
        """The usage of the stream's metadata event, once it arrived."""
        return self._translator.usage

    async def read(self) -> list[StreamEvent | UpstreamFault] | None:
        """The chunks of the next event; exception events raise (mapped by bedrock_errors)."""
        with translate_bedrock_errors(STREAM, self._secrets):
            event = await anext(self._events, None)
        if event is None:
            return None
        # Parsed already; its JSON size stands in for the bytes it took on the wire.
        self._received += len(json.dumps(event, default=str))
        if self._received > self._max_bytes:
            return [
                fault(
                    FaultKind.OVERSIZE,
                    f"the upstream's stream passed {self._max_bytes} bytes"
                    " (gateway.upstream_limits.stream_bytes)",
                )
            ]
        try:
            return list(self._translator.feed(event))
        except UpstreamFault as exc:
            return [exc]

    async def drain(self) -> None:
        """Read the rest (nothing follows the metadata event) briefly, then close."""
        if self._closed:
            return
        try:
            async with asyncio.timeout(_DRAIN_S):
                with translate_bedrock_errors(STREAM, self._secrets):
                    async for _ in self._events:
                        pass
        except (TimeoutError, UpstreamFault):
            pass  # the answer is complete; a messy ending costs only the connection
        await self.aclose()

    async def aclose(self) -> None:
        """Close the event generators and the HTTP response under them."""
        if self._closed:
            return
        self._closed = True
        for generator in (self._events, getattr(self._stream, "_event_generator", None)):
            closer = getattr(generator, "aclose", None)
            if closer is not None:
                # A generator still running (a cancelled read) ends with its task.
                with contextlib.suppress(RuntimeError, UpstreamFault):
                    await closer()
        self._stream.close()
