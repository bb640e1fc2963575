"""The one request pipeline at the edge, whatever the surface.

    identify -> read body -> codec.parse -> ProxyRequest -> gateway -> codec.answer / codec.stream

The configuration is read once here and handed to the service, so the key
check, the body limit and routing see the same version; the client key is
hashed once (``identify``) and only the caller id travels on. Errors are
answered by the surface's handler (``errors.guarded`` with ``codec.error``).
"""

from __future__ import annotations

import logging

from starlette.background import BackgroundTask
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse

from edgeproxy.api.codec import Codec, request_id
from edgeproxy.api.identity import Identity, identify
from edgeproxy.api.parsing import read_json_object
from edgeproxy.config.models import GatewayConfig
from edgeproxy.errors import UpstreamError
from edgeproxy.service.gateway import Gateway
from edgeproxy.service.request import ProxyRequest

logger = logging.getLogger(__name__)
_STREAM_HEADERS = {"cache-control": "no-cache", "x-accel-buffering": "no"}


async def gateway_of(request: Request) -> Gateway:
    """The process's gateway (built on first use by the app's ``LazyGateway``)."""
    gateway: Gateway = await request.app.state.gateway.get()
    return gateway


async def identified(request: Request) -> tuple[Gateway, GatewayConfig, Identity]:
    """The gateway, this request's one read of the configuration, and the authenticated caller."""
    gateway = await gateway_of(request)
    config = await gateway.config()
    return gateway, config, identify(request, config.gateway, gateway.trust_forwarded_for)


async def serve(request: Request, codec: Codec) -> Response:
    """Serve one proxied request on ``codec``'s surface; errors raise to the route's guard."""
    gateway, config, who = await identified(request)
    limits = config.gateway
    body = await read_json_object(request, limits.max_body_bytes, limits.body_read_timeout_seconds)
    parsed = codec.parse(body)
    pin = request.headers.get("x-route-pin") if who.admin else None
    req = ProxyRequest(
        operation=codec.operation,
        model=parsed.model,
        body=parsed.body,
        caller=who.caller,
        request_id=request_id(request),
        stream=parsed.stream,
        pin=pin or None,
        want_routing=request.headers.get("x-unified-routing-metadata", "").lower() == "true",
        modalities=parsed.modalities,
        surface=codec.surface,
    )
    headers = codec.headers(req.request_id)
    if req.stream:
        answer = await gateway.open_stream(req, config)
        return StreamingResponse(
            codec.stream(answer.body),
            media_type="text/event-stream",
            headers={**headers, **answer.headers, **_STREAM_HEADERS},
            background=BackgroundTask(answer.after) if answer.after else None,
        )
    result = await gateway.complete(req, config)
    try:
        return JSONResponse(
            codec.answer(result.body),
            headers={**headers, **result.headers},
            background=BackgroundTask(result.after) if result.after else None,
        )
    except Exception as exc:
        # An answer this surface cannot render: the attempt's outcome must still be
        # written (it releases the in-flight count), and the client gets a clean 502.
        if result.after:
            await result.after()
        logger.warning("could not render an upstream answer: %s", type(exc).__name__)
        raise UpstreamError(
            "The upstream's answer could not be translated.", status=502, type="api_error"
        ) from None
