"""``POST /v1/messages``: the Anthropic Messages surface over the same gateway.

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

import logging
from collections.abc import Awaitable, Callable

from starlette.background import BackgroundTask
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse

from edgeproxy.api.identity import identify
from edgeproxy.api.messages_answer import error_response, to_message
from edgeproxy.api.messages_request import SURFACE, to_chat_request
from edgeproxy.api.messages_stream import message_stream
from edgeproxy.api.parsing import read_json_object
from edgeproxy.config.models import Operation
from edgeproxy.errors import EdgeproxyError
from edgeproxy.service.gateway import Gateway
from edgeproxy.service.request import ProxyRequest

logger = logging.getLogger(__name__)


async def messages_endpoint(
    request: Request, gateway: Callable[[], Awaitable[Gateway]], request_id: str
) -> Response:
    """Serve one Messages request; never raises (errors answer in Anthropic's JSON).

    ``gateway`` builds or returns the process's gateway (``LazyGateway.get``).
    """
    # Anthropic's SDK reads ``request-id``; the OpenAI surface's header is kept too.
    headers = {"x-request-id": request_id, "request-id": request_id}
    try:
        service = await gateway()
        req = await _proxy_request(request, service, request_id)
        if req.stream:
            answer = await service.open_stream(req)
            return StreamingResponse(
                message_stream(answer.body),
                media_type="text/event-stream",
                headers={
                    **headers,
                    **answer.headers,
                    "cache-control": "no-cache",
                    "x-accel-buffering": "no",
                },
                background=BackgroundTask(answer.after) if answer.after else None,
            )
        result = await service.complete(req)
        background = BackgroundTask(result.after) if result.after else None
        return JSONResponse(
            to_message(result.body), headers={**headers, **result.headers}, background=background
        )
    except EdgeproxyError as exc:
        return error_response(exc, headers)
    except Exception:
        logger.exception("unhandled error while serving %s", request.url.path)
        return error_response(EdgeproxyError("internal error"), headers)


async def _proxy_request(request: Request, gateway: Gateway, request_id: str) -> ProxyRequest:
    config = await gateway.config()
    who = identify(request, config.gateway, gateway.trust_forwarded_for)
    chat = to_chat_request(await read_json_object(request, config.gateway.max_body_bytes))
    pin = request.headers.get("x-route-pin") if who.admin else None
    return ProxyRequest(
        operation=Operation.CHAT,
        model=chat.model,
        body=chat.body,
        caller=who.caller,
        request_id=request_id,
        stream=chat.stream,
        pin=pin or None,
        want_routing=request.headers.get("x-unified-routing-metadata", "").lower() == "true",
        modalities=chat.modalities,
        surface=SURFACE,
    )
