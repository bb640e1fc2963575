"""OpenAI and OpenAI-compatible upstreams: the body passes through almost untouched.

Chat completions and embeddings, and the Responses API (``/responses``) for
deployments that list ``responses`` in their ``operations``: its body, answer
and typed stream events pass through as they are; only its ``error`` and
``response.failed`` events are raised (as the chat stream's ``error`` chunks
are), so that routing judges them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from edgeproxy import strict_json
from edgeproxy.config.policies import Operation
from edgeproxy.routing.faults import FaultKind
from edgeproxy.routing.stream.completeness import responses_event
from edgeproxy.upstream.adapter import Prepared, check_carried, wire_body
from edgeproxy.upstream.call import DONE, StreamEvent, UpstreamCall, Usage
from edgeproxy.upstream.errors import fault, stream_error_fault
from edgeproxy.upstream.sse import ServerSentEvent

_PATHS = {
    Operation.CHAT: "/chat/completions",
    Operation.COMPLETIONS: "/completions",
    Operation.EMBEDDINGS: "/embeddings",
    Operation.RESPONSES: "/responses",
}
_FAILED_EVENTS = frozenset({"error", "response.failed"})


class OpenAIAdapter:
    """``POST {base_url}/chat/completions``, ``/completions``, ``/embeddings``, ``/responses``."""

    def prepare(self, call: UpstreamCall) -> Prepared:
        """Path, headers and body for ``call``; chat, completions, embeddings and responses."""
        check_carried(call)
        path = _PATHS[call.operation]  # every operation CARRIAGE lists for the openai kinds
        headers = {"accept": "text/event-stream" if call.stream else "application/json"}
        if call.credential:
            headers["authorization"] = f"Bearer {call.credential}"
        return Prepared(path=path, headers=headers, body=wire_body(call))

    def response(self, payload: dict[str, Any], created: int) -> dict[str, Any]:
        """Already OpenAI format; ``created`` is unused."""
        return payload

    def translator(
        self, created: int, secrets: Sequence[str | None], include_usage: bool = False
    ) -> OpenAIChunks:
        """A parser for one ``chat.completion.chunk`` (or ``text_completion``) stream.

        The upstream sends the usage chunk itself when asked (``include_usage`` unused).
        """
        return OpenAIChunks(secrets)


class OpenAIChunks:
    """Parses ``data:`` JSON chunks; ``[DONE]`` becomes the end marker.

    Responses API events (typed, no ``choices``) pass through as chunks; their
    stream ends at its terminal event (judged by the tracker), so a ``[DONE]``
    after them means nothing.
    """

    def __init__(self, secrets: Sequence[str | None]) -> None:
        self._secrets = secrets
        self.usage: Usage | None = None
        self._events = False

    def feed(self, event: ServerSentEvent) -> list[StreamEvent]:
        """One chunk per data event; an ``error`` object raises ``UpstreamFault``."""
        if event.data.strip() == "[DONE]":
            return [] if self._events else [DONE]
        chunk = parse_json_object(event.data, "stream chunk")
        if "error" in chunk:
            raise stream_error_fault(chunk, self._secrets)
        kind = responses_event(chunk)
        if kind is not None:
            self._event(kind, chunk)
            return [StreamEvent(chunk=chunk)]
        usage = Usage.from_openai(chunk.get("usage"))
        if usage is not None:
            self.usage = usage
        return [StreamEvent(chunk=chunk)]

    def _event(self, kind: str, chunk: dict[str, Any]) -> None:
        self._events = True
        response = chunk.get("response")
        response = response if isinstance(response, dict) else {}
        if kind in _FAILED_EVENTS:
            error = chunk if kind == "error" else response.get("error")
            error = error if isinstance(error, dict) else {}
            message = error.get("message") or "The upstream's response failed."
            payload = {"message": message, "code": error.get("code"), "param": error.get("param")}
            raise stream_error_fault({"error": payload}, self._secrets)
        usage = Usage.from_openai(response.get("usage"))
        if usage is not None:
            self.usage = usage


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
