"""What a client protocol (a *surface*) must say to share the one request pipeline.

    parse    the client's JSON body      -> Parsed (what ProxyRequest needs of it)
    answer   the gateway's JSON answer   -> the client's answer body
    stream   the relay's typed events    -> the client's SSE bytes
    error    an ``EdgeproxyError``       -> the client's error response

The OpenAI surface (``api/surfaces/openai.py``), the Anthropic Messages surface
(``api/surfaces/messages.py``) and the Responses API (``api/surfaces/responses.py``) implement it; ``api/pipeline.py`` runs every request
through one of them. A new surface is one more codec and one more route.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any, Protocol

from starlette.requests import Request
from starlette.responses import Response

from edgeproxy.api.rate_headers import RateNames
from edgeproxy.config.policies import Operation
from edgeproxy.errors import EdgeproxyError
from edgeproxy.service.request import Translated
from edgeproxy.service.stream.events import StreamItem


@dataclass(frozen=True, slots=True)
class Parsed:
    """A validated client body as the service routes it (an OpenAI-format body)."""

    model: str
    body: dict[str, Any]
    stream: bool
    modalities: frozenset[str]
    chat: Translated | None = None  # a Responses body's chat translation (``ProxyRequest.chat``)
    prompt_estimate: int | None = None  # the surface's own input-token estimate, if it makes one


class Codec(Protocol):
    """One surface's translation to and from the gateway's OpenAI-format service."""

    @property
    def operation(self) -> Operation:
        """The pool operation its requests route as."""
        ...

    @property
    def surface(self) -> str | None:
        """The binding protocol when it is not ``openai.<operation>`` (``ProxyRequest.surface``)."""
        ...

    @property
    def rate_names(self) -> RateNames:
        """The rate-limit header names its SDK reads (the upstream's are translated to them)."""
        ...

    def parse(self, body: dict[str, Any]) -> Parsed:
        """Validate and translate a body; raises ``RequestError`` (400)."""
        ...

    def headers(self, request_id: str) -> dict[str, str]:
        """The response headers naming the request, as this surface's SDKs read them."""
        ...

    def answer(self, body: dict[str, Any], now: float) -> dict[str, Any]:
        """The client's JSON answer for the gateway's (OpenAI-format) one, sent at ``now``."""
        ...

    def stream(
        self, events: AsyncIterator[StreamItem], parsed: Parsed, now: float
    ) -> AsyncIterator[bytes]:
        """The client's SSE body for a relayed stream of ``parsed`` opened at ``now``; closes
        ``events`` when done."""
        ...

    def error(self, exc: EdgeproxyError, request: Request) -> Response:
        """The client's view of ``exc``: its status, this surface's error JSON, Retry-After."""
        ...


def request_id(request: Request) -> str:
    """The request's id: the client's ``x-request-id``, API Gateway's, or a new one.

    Chosen once per request (kept on ``request.state``), so the answer, an
    error and the logs all name the same id.
    """
    chosen = getattr(request.state, "request_id", None)
    if isinstance(chosen, str):
        return chosen
    event = request.scope.get("aws.event") or {}
    context = event.get("requestContext", {}) if isinstance(event, dict) else {}
    chosen = str(
        request.headers.get("x-request-id") or context.get("requestId") or uuid.uuid4().hex
    )
    request.state.request_id = chosen
    return chosen
