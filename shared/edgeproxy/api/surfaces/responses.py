"""``POST /v1/responses``: the OpenAI Responses API as a codec over the same gateway.

A Responses request routes over the public model's pool like a chat request
(same failover, circuits, commit point and in-band errors), as operation
``responses`` with its own deadline row and sticky bindings
(``openai.responses``). Per attempt, a deployment that lists ``responses`` in
its ``operations`` is sent the body as it is (``/responses``: pass-through,
``previous_response_id`` and stored responses included); any other chat
deployment (OpenAI-compatible or Anthropic) gets its chat translation
(``responses_request``), and its answer and stream come back translated
(``responses_answer``, ``responses_stream``). Errors are OpenAI's JSON.

    client = openai.OpenAI(base_url=GATEWAY + "/v1", api_key="sk-...")
    client.responses.create(model="fast-chat", input="Hello")
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from edgeproxy.api.codec import Parsed
from edgeproxy.api.errors import error_response
from edgeproxy.api.rate_headers import OPENAI_RATES
from edgeproxy.api.surfaces.responses_answer import to_response
from edgeproxy.api.surfaces.responses_request import to_chat_request
from edgeproxy.api.surfaces.responses_stream import response_stream
from edgeproxy.config.policies import Operation
from edgeproxy.errors import EdgeproxyError
from edgeproxy.service.stream.events import StreamItem


class ResponsesSurface:
    """The codec for OpenAI's Responses API."""

    operation = Operation.RESPONSES
    surface: str | None = None  # bindings use ``openai.responses``
    rate_names = OPENAI_RATES

    def parse(self, body: dict[str, Any]) -> Parsed:
        """Validate a Responses body; keep it, with its chat translation (if it has one)."""
        return to_chat_request(body)

    def headers(self, request_id: str) -> dict[str, str]:
        """``x-request-id``."""
        return {"x-request-id": request_id}

    def answer(self, body: dict[str, Any], now: float) -> dict[str, Any]:
        """A ``response`` object (a native deployment's passes as it is)."""
        return to_response(body, now)

    def stream(
        self, events: AsyncIterator[StreamItem], parsed: Parsed, now: float
    ) -> AsyncIterator[bytes]:
        """Responses API events for the relay's events."""
        return response_stream(events, now)

    def error(self, exc: EdgeproxyError, request: Request) -> Response:
        """OpenAI's error JSON (``errors.error_response``)."""
        return error_response(exc)


RESPONSES = ResponsesSurface()
