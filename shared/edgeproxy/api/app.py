"""The ASGI app: the OpenAI-compatible surface over the gateway service.

The same app runs under uvicorn (``make run``) and under Mangum on Lambda.
The service (clients, store, configuration) is built lazily on the first
request, inside the running event loop, once per process / execution
environment, by the ``runtime`` factory given to ``create_app``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from starlette.applications import Starlette
from starlette.background import BackgroundTask
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from edgeproxy.api.errors import exception_handlers, guarded
from edgeproxy.api.identity import identify
from edgeproxy.api.messages import messages_endpoint
from edgeproxy.api.parsing import (
    chat_modalities,
    embeddings_input,
    read_json_object,
    require_model,
    stream_flag,
)
from edgeproxy.config.models import Operation
from edgeproxy.errors import PermissionDenied
from edgeproxy.service.gateway import Gateway
from edgeproxy.service.request import ProxyRequest

logger = logging.getLogger(__name__)

RuntimeFactory = Callable[[], Awaitable[Gateway]]


class LazyGateway:
    """Builds the gateway once, on first use, inside the serving event loop."""

    def __init__(self, factory: RuntimeFactory) -> None:
        self._factory = factory
        self._gateway: Gateway | None = None
        self._lock = asyncio.Lock()

    async def get(self) -> Gateway:
        if self._gateway is None:
            async with self._lock:
                if self._gateway is None:
                    self._gateway = await self._factory()
        return self._gateway

    async def aclose(self) -> None:
        """Close the gateway's clients, if it was ever built."""
        if self._gateway is not None:
            gateway, self._gateway = self._gateway, None
            await gateway.aclose()


def _request_id(request: Request) -> str:
    event = request.scope.get("aws.event") or {}
    context = event.get("requestContext", {}) if isinstance(event, dict) else {}
    return str(request.headers.get("x-request-id") or context.get("requestId") or uuid.uuid4().hex)


async def _proxy_request(request: Request, gateway: Gateway, operation: Operation) -> ProxyRequest:
    config = await gateway.config()
    who = identify(request, config.gateway, gateway.trust_forwarded_for)
    body = await read_json_object(request, config.gateway.max_body_bytes)
    model = require_model(body)
    stream = stream_flag(body)
    if operation is Operation.CHAT:
        modalities = chat_modalities(body)
    else:
        embeddings_input(body)
        modalities = frozenset({"text"})
        if stream:
            stream = False  # embeddings have no stream mode; forward as-is
    pin = request.headers.get("x-route-pin") if who.admin else None
    return ProxyRequest(
        operation=operation,
        model=model,
        body=body,
        caller=who.caller,
        request_id=_request_id(request),
        stream=stream,
        pin=pin or None,
        want_routing=request.headers.get("x-unified-routing-metadata", "").lower() == "true",
        modalities=modalities,
    )


def create_app(runtime: RuntimeFactory) -> Starlette:
    """The ASGI app over a lazily built gateway.

    >>> app = create_app(build_gateway_from_env)  # doctest: +SKIP
    >>> # uvicorn.run(app) locally, or Mangum(app, lifespan="off") on Lambda
    """
    lazy = LazyGateway(runtime)

    async def proxy(request: Request, operation: Operation) -> Response:
        gateway = await lazy.get()
        req = await _proxy_request(request, gateway, operation)
        headers = {"x-request-id": req.request_id}
        if req.stream:
            answer = await gateway.open_stream(req)
            headers.update(answer.headers)
            return StreamingResponse(
                answer.body,
                media_type="text/event-stream",
                headers={**headers, "cache-control": "no-cache", "x-accel-buffering": "no"},
                background=BackgroundTask(answer.after) if answer.after else None,
            )
        result = await gateway.complete(req)
        headers.update(result.headers)
        background = BackgroundTask(result.after) if result.after else None
        return JSONResponse(result.body, headers=headers, background=background)

    async def chat(request: Request) -> Response:
        return await proxy(request, Operation.CHAT)

    async def embeddings(request: Request) -> Response:
        return await proxy(request, Operation.EMBEDDINGS)

    async def models(request: Request) -> Response:
        gateway = await lazy.get()
        config = await gateway.config()
        identify(request, config.gateway, gateway.trust_forwarded_for)
        data: list[dict[str, Any]] = [
            {"id": model, "object": "model", "created": 0, "owned_by": "edgeproxy"}
            for model in config.public_models()
        ]
        return JSONResponse({"object": "list", "data": data})

    async def deployments(request: Request) -> Response:
        gateway = await lazy.get()
        config = await gateway.config()
        who = identify(request, config.gateway, gateway.trust_forwarded_for)
        if not who.admin:
            raise PermissionDenied("The deployment status view requires an admin key.")
        model = request.path_params["model"]
        return JSONResponse(await gateway.deployment_status(model))

    async def messages(request: Request) -> Response:
        return await messages_endpoint(request, lazy.get, _request_id(request))

    async def health(request: Request) -> Response:
        return JSONResponse({"status": "ok"})

    routes = [
        Route("/v1/chat/completions", guarded(chat), methods=["POST"]),
        Route("/v1/embeddings", guarded(embeddings), methods=["POST"]),
        Route("/v1/messages", guarded(messages), methods=["POST"]),
        Route("/v1/models", guarded(models), methods=["GET"]),
        Route("/v1/models/{model:path}/deployments", guarded(deployments), methods=["GET"]),
        Route("/health", health, methods=["GET"]),
    ]

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        # Under uvicorn the clients close at shutdown; Lambda (lifespan off) just freezes them.
        try:
            yield
        finally:
            await lazy.aclose()

    app = Starlette(routes=routes, exception_handlers=exception_handlers(), lifespan=lifespan)
    app.state.gateway = lazy  # for hosts without lifespan (Lambda tests) to close clients
    return app
