"""The ASGI app: the OpenAI and Anthropic surfaces over the gateway service.

The same app runs under uvicorn (``make run``) and under Mangum on Lambda.
The service (clients, store, configuration) is built lazily on the first
request, inside the running event loop, once per process / execution
environment, by the ``runtime`` factory given to ``create_app``.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
from collections.abc import AsyncIterator, Awaitable, Callable

from starlette.applications import Starlette
from starlette.routing import BaseRoute, Route

from edgeproxy.api import aliases, endpoints
from edgeproxy.api.codec import Codec
from edgeproxy.api.deferred import DeferredRoutes
from edgeproxy.api.errors import exception_handlers, guarded
from edgeproxy.api.surfaces.messages import MESSAGES
from edgeproxy.api.surfaces.openai import CHAT, COMPLETIONS, EMBEDDINGS
from edgeproxy.api.surfaces.responses import RESPONSES
from edgeproxy.service.gateway import Gateway

RuntimeFactory = Callable[[], Awaitable[Gateway]]

# Each proxied route names its codec once: the codec parses, renders and answers its errors.
SURFACES: tuple[tuple[str, Codec], ...] = (
    ("/v1/chat/completions", CHAT),
    ("/v1/completions", COMPLETIONS),
    ("/v1/embeddings", EMBEDDINGS),
    ("/v1/messages", MESSAGES),
    ("/v1/responses", RESPONSES),
)


class LazyGateway:
    """Builds the gateway once, on first use, inside the serving event loop."""

    def __init__(self, factory: RuntimeFactory) -> None:
        self._factory = factory
        self._gateway: Gateway | None = None
        self._lock = asyncio.Lock()

    async def get(self) -> Gateway:
        """The gateway, built by the first caller; what the build left is then frozen.

        ``gc.freeze()`` moves every object alive after the build (the modules,
        the configuration, the clients: most of the heap) out of the
        collector's reach. A full collection otherwise walks all of it every
        few hundred requests: tens of ms of CPU in one request, the one-client
        tail. Objects of that heap that later become cyclic garbage (a
        replaced configuration's cycles) are kept, once: a bounded cost.
        """
        if self._gateway is None:
            async with self._lock:
                if self._gateway is None:
                    self._gateway = await self._factory()
                    gc.collect()  # the build's own garbage goes now, not into the frozen heap
                    gc.freeze()
        return self._gateway

    def built(self) -> Gateway | None:
        """The gateway if it was built already (never builds it)."""
        return self._gateway

    async def aclose(self) -> None:
        """Close the gateway's clients, if it was ever built."""
        if self._gateway is not None:
            gateway, self._gateway = self._gateway, None
            await gateway.aclose()


def admin_api() -> list[BaseRoute]:
    """The status page's routes and the admin API's (imported on first use)."""
    from edgeproxy.api.admin import page, routes

    return [*page.routes(), *routes.starlette_routes()]


def create_app(runtime: RuntimeFactory) -> Starlette:
    """The ASGI app over a lazily built gateway.

    >>> app = create_app(build_gateway_from_env)  # doctest: +SKIP
    >>> # uvicorn.run(app) locally, or Mangum(app, lifespan="off") on Lambda
    """
    lazy = LazyGateway(runtime)
    routes = [
        *(
            Route(path, guarded(endpoints.proxied(codec), codec.error), methods=["POST"])
            for path, codec in SURFACES
        ),
        Route(
            "/v1/messages/count_tokens",
            guarded(endpoints.count_tokens, MESSAGES.error),
            methods=["POST"],
        ),
        Route("/v1/models", guarded(endpoints.models), methods=["GET"]),
        Route(
            "/v1/models/{model:path}/deployments",
            guarded(endpoints.deployments),
            methods=["GET"],
        ),
        # After the deployments view, which would otherwise read as a model named ".../deployments".
        Route("/v1/models/{model:path}", guarded(endpoints.model), methods=["GET"]),
        Route("/health", guarded(endpoints.health), methods=["GET"]),
        # /admin/*: the status page, then the admin API (admin keys only), /health/deep and
        # /metrics; imported on the first request there, not at cold start.
        DeferredRoutes(("/admin", "/health/deep", "/metrics"), admin_api),
    ]
    routes += aliases.unversioned(routes)  # /chat/completions ... as LiteLLM serves them

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        # Under uvicorn the clients close at shutdown; Lambda (lifespan off) just freezes them.
        try:
            yield
        finally:
            await lazy.aclose()

    # Routing errors (404, 405) under a surface's path, with or without /v1, answer in
    # that surface's shape.
    handlers = exception_handlers(
        {
            where: codec.error
            for path, codec in SURFACES
            for where in (path, path.removeprefix(aliases.PREFIX))
        }
    )
    app = Starlette(routes=routes, exception_handlers=handlers, lifespan=lifespan)
    # Endpoints reach the gateway here; hosts without lifespan (Lambda) close it here too.
    app.state.gateway = lazy
    return app
