"""OpenAI and OpenAI-compatible upstreams: the body passes through almost untouched."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from edgeproxy import strict_json
from edgeproxy.config.policies import Operation
from edgeproxy.routing.faults import FaultKind
from edgeproxy.upstream.adapter import Prepared, wire_body
from edgeproxy.upstream.call import DONE, StreamEvent, UpstreamCall, Usage
from edgeproxy.upstream.errors import fault, stream_error_fault
from edgeproxy.upstream.sse import ServerSentEvent

_PATHS = {
    Operation.CHAT: "/chat/completions",
    Operation.COMPLETIONS: "/completions",
    Operation.EMBEDDINGS: "/embeddings",
}


class OpenAIAdapter:
    """``POST {base_url}/chat/completions``, ``/completions``, ``/embeddings`` with a Bearer key."""

    def prepare(self, call: UpstreamCall) -> Prepared:
        """Path, headers and body for ``call``; chat, completions and embeddings are served."""
        path = _PATHS.get(call.operation)
        if path is None:
            raise fault(
                FaultKind.INCOMPATIBLE,
                f"operation {call.operation.value} is not supported by this deployment",
            )
        headers = {"accept": "text/event-stream" if call.stream else "application/json"}
        if call.credential:
            headers["authorization"] = f"Bearer {call.credential}"
        return Prepared(path=path, headers=headers, body=wire_body(call))

    def response(self, payload: dict[str, Any], created: int) -> dict[str, Any]:
        """Already OpenAI format; ``created`` is unused."""
        return payload

    def translator(self, created: int, secrets: Sequence[str | None]) -> OpenAIChunks:
        """A parser for one ``chat.completion.chunk`` (or ``text_completion``) stream."""
        return OpenAIChunks(secrets)


class OpenAIChunks:
    """Parses ``data:`` JSON chunks; ``[DONE]`` becomes the end marker."""

    def __init__(self, secrets: Sequence[str | None]) -> None:
        self._secrets = secrets
        self.usage: Usage | None = None

    def feed(self, event: ServerSentEvent) -> list[StreamEvent]:
        """One chunk per data event; an ``error`` object raises ``UpstreamFault``."""
        if event.data.strip() == "[DONE]":
            return [DONE]
        chunk = parse_json_object(event.data, "stream chunk")
        if "error" in chunk:
            raise stream_error_fault(chunk, self._secrets)
        usage = Usage.from_openai(chunk.get("usage"))
        if usage is not None:
            self.usage = usage
        return [StreamEvent(chunk=chunk)]


def parse_json_object(text: str | bytes, what: str) -> dict[str, Any]:
    """``text`` as a JSON object, or an ``UpstreamFault`` (MALFORMED)."""
    try:
        # Strict: NaN, a lone surrogate or absurd nesting could not be re-encoded for the client.
        value = strict_json.loads(text)
    except ValueError as exc:
        raise fault(
            FaultKind.MALFORMED, f"the upstream's {what} is not valid JSON ({exc})"
        ) from exc
    if not isinstance(value, dict):
        raise fault(FaultKind.MALFORMED, f"the upstream's {what} is not a JSON object")
    return value
