"""How the gateway fills a ``RequestSpan``: a JSON answer or error, and a relayed stream.

Every function here takes the span the gateway opened, or None when tracing
is off, and then does nothing: the request path pays one ``is None``.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

from edgeproxy.config.models import GatewayConfig
from edgeproxy.errors import EdgeproxyError
from edgeproxy.service.request import ProxyRequest
from edgeproxy.service.stream.events import Chunk, Closing, Failed, StreamItem
from edgeproxy.service.trace import Trace
from edgeproxy.service.tracing.span import RequestSpan, Tracer
from edgeproxy.upstream.call import UpstreamResponse

logger = logging.getLogger(__name__)

CLIENT_GONE = 499  # the client closed the request (nginx's code; never sent)


def export(tracer: Tracer, span: RequestSpan, trace: Trace) -> None:
    """Hand ``span`` to ``tracer``; a tracer's failure is logged, never the request's."""
    try:
        tracer.export(span, trace)
    except Exception:
        logger.exception("tracer failed to record request %s", span.request_id)


def opened(
    tracer: Tracer, req: ProxyRequest, config: GatewayConfig, now: float
) -> RequestSpan | None:
    """A span for ``req`` starting ``now``, or None when ``tracer`` wants none."""
    return RequestSpan.of(req, config, now) if tracer.enabled else None


def failed(span: RequestSpan, exc: BaseException) -> None:
    """``span`` ends with ``exc``: its status and a low-cardinality error type."""
    if isinstance(exc, EdgeproxyError):
        span.status = exc.status
        span.error_type = exc.code or exc.type
    elif isinstance(exc, asyncio.CancelledError):
        span.status = CLIENT_GONE
        span.error_type = "client_gone"
    else:
        span.status = 500
        span.error_type = type(exc).__qualname__


def answered(span: RequestSpan, response: UpstreamResponse) -> None:
    """``span`` ends with a JSON answer: the served model, id and usage."""
    span.status = 200
    body = response.body
    model, rid = body.get("model"), body.get("id")
    span.response_model = model if isinstance(model, str) else None
    span.response_id = rid if isinstance(rid, str) else None
    span.input_tokens = response.usage.prompt_tokens
    span.output_tokens = response.usage.completion_tokens


def finish_json(
    tracer: Tracer,
    span: RequestSpan | None,
    trace: Trace,
    now: float,
    *,
    response: UpstreamResponse | None = None,
    error: BaseException | None = None,
) -> None:
    """Export a JSON request's spans (``response`` or ``error``)."""
    if span is None:
        return
    if error is not None:
        failed(span, error)
    elif response is not None:
        answered(span, response)
    span.ended_at = now
    export(tracer, span, trace)


class TracedStream:
    """A relayed stream's events, passed through, noting what the span needs.

    The first ``Chunk`` is the time to first token (and carries the served
    model and id); ``Closing`` the usage; ``Failed`` the in-band error. The
    span is exported once: when the events end, or when the surface closes
    the stream early (the client left).
    """

    def __init__(
        self,
        events: Any,
        tracer: Tracer,
        span: RequestSpan,
        trace: Trace,
        clock: Callable[[], float],
    ) -> None:
        self._events = events
        self._tracer = tracer
        self._span = span
        self._trace = trace
        self._clock = clock
        self._done = False
        self.headers: dict[str, str] = dict(getattr(events, "headers", {}) or {})

    def __aiter__(self) -> TracedStream:
        return self

    async def __anext__(self) -> StreamItem:
        try:
            item: StreamItem = await self._events.__anext__()
        except StopAsyncIteration:
            self._end()
            raise
        except BaseException as exc:
            self._end(exc)
            raise
        self._note(item)
        return item

    def _note(self, item: StreamItem) -> None:
        span = self._span
        if isinstance(item, Chunk):
            if span.first_token_at is None:
                span.first_token_at = self._clock()
                model, rid = item.data.get("model"), item.data.get("id")
                span.response_model = model if isinstance(model, str) else None
                span.response_id = rid if isinstance(rid, str) else None
        elif isinstance(item, Closing):
            span.status = 200
            if item.usage is not None:
                span.input_tokens = item.usage.prompt_tokens
                span.output_tokens = item.usage.completion_tokens
        elif isinstance(item, Failed):
            failed(span, item.error)

    def _end(self, exc: BaseException | None = None) -> None:
        if self._done:
            return
        self._done = True
        span = self._span
        if exc is not None:
            failed(span, exc)
        elif span.status is None:  # closed before Closing or Failed: the client left
            span.status, span.error_type = CLIENT_GONE, "client_gone"
        span.ended_at = self._clock()
        export(self._tracer, span, self._trace)

    async def aclose(self) -> None:
        aclose = getattr(self._events, "aclose", None)
        try:
            if aclose is not None:
                await aclose()
        finally:
            self._end()
