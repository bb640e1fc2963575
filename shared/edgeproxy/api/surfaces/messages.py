"""``POST /v1/messages``: the Anthropic Messages surface as a codec over the same gateway.

The Messages body is translated to an OpenAI chat body and routed exactly as
``/v1/chat/completions`` is (same pools, failover, circuits), with sticky
bindings of their own (protocol ``anthropic.messages``). Answers, streams and
every error on this route come back in Anthropic's shapes, with the HTTP status
(and Retry-After) the OpenAI surface would give.

    client = anthropic.Anthropic(base_url=GATEWAY, api_key="sk-...")
    client.messages.create(model="fast-chat", max_tokens=256,
                           messages=[{"role": "user", "content": "Hello"}])
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import replace
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from edgeproxy.api.codec import Parsed, request_id
from edgeproxy.api.rate_headers import ANTHROPIC_RATES
from edgeproxy.api.surfaces.messages_answer import error_response, to_message
from edgeproxy.api.surfaces.messages_request import SURFACE, to_chat_request
from edgeproxy.api.surfaces.messages_stream import message_stream
from edgeproxy.api.surfaces.messages_tokens import estimate
from edgeproxy.config.policies import Operation
from edgeproxy.errors import EdgeproxyError
from edgeproxy.service.stream.events import StreamItem


class MessagesSurface:
    """The codec for Anthropic's Messages API."""

    operation = Operation.CHAT
    surface: str | None = SURFACE
    rate_names = ANTHROPIC_RATES

    def parse(self, body: dict[str, Any]) -> Parsed:
        """Validate a Messages body and translate it to a chat body (with its token estimate)."""
        parsed = to_chat_request(body)
        return replace(parsed, prompt_estimate=estimate(body)) if parsed.stream else parsed

    def headers(self, request_id: str) -> dict[str, str]:
        """Anthropic's SDK reads ``request-id``; the OpenAI surface's header is kept too."""
        return {"x-request-id": request_id, "request-id": request_id}

    def answer(self, body: dict[str, Any], now: float) -> dict[str, Any]:
        """The chat completion as an Anthropic ``message``."""
        return to_message(body)

    def stream(
        self, events: AsyncIterator[StreamItem], parsed: Parsed, now: float
    ) -> AsyncIterator[bytes]:
        """Anthropic Messages events for the relay's events."""
        return message_stream(events, parsed.prompt_estimate)

    def error(self, exc: EdgeproxyError, request: Request) -> Response:
        """Anthropic's error JSON (``messages_answer.error_response``), naming the request."""
        return error_response(exc, self.headers(request_id(request)))


MESSAGES = MessagesSurface()
