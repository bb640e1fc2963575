"""The routes' endpoints, as module-level functions over the app's gateway.

Proxied requests go through ``pipeline.serve`` with their surface's codec;
the two read-only views (model list, deployment status) use the same
identification. Each endpoint is wrapped in its surface's error guard by
``app.create_app``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from edgeproxy.api.codec import Codec, request_id
from edgeproxy.api.identity import Identity, admit, may_use
from edgeproxy.api.parsing import read_json_object
from edgeproxy.api.pipeline import identified, serve
from edgeproxy.api.surfaces.messages import MESSAGES
from edgeproxy.api.surfaces.messages_tokens import check_count_request, estimate
from edgeproxy.config.models import GatewayConfig
from edgeproxy.errors import ModelNotFound, PermissionDenied
from edgeproxy.routing.judge.reasons import not_allowed
from edgeproxy.service.gateway import Gateway


def proxied(codec: Codec) -> Callable[[Request], Awaitable[Response]]:
    """The endpoint of a proxied route: ``pipeline.serve`` on ``codec``'s surface."""

    async def endpoint(request: Request) -> Response:
        return await serve(request, codec)

    endpoint.__name__ = endpoint.__qualname__ = f"proxied_{codec.operation.value}"
    return endpoint


async def count_tokens(request: Request) -> Response:
    """``POST /v1/messages/count_tokens``: an Anthropic deployment's count, or the estimate.

    ``x-edgeproxy-token-count`` says which (``upstream`` or ``estimate``).
    """
    gateway, config, who = await identified(request)
    slot = gateway.key_slots.take(who.slot_holder)
    try:
        return await _counted(request, gateway, config, who)
    finally:
        slot.release()


async def _counted(
    request: Request, gateway: Gateway, config: GatewayConfig, who: Identity
) -> Response:
    limits = config.gateway
    body = await read_json_object(request, limits.max_body_bytes, limits.body_read_timeout_seconds)
    requested = check_count_request(body)
    model = config.canonical(requested)
    await admit(who, requested, gateway.keys, config.names_of(model))
    pool = config.pool(model)
    if not pool:
        raise ModelNotFound(f"The model `{model}` does not exist.", param="model")
    headers = MESSAGES.headers(request_id(request))
    counted = await gateway.tokens.count(
        pool, body, who.role, limits.upstream_limits, egress=limits.egress
    )
    if counted is None:
        headers["x-edgeproxy-token-count"] = "estimate"
        return JSONResponse({"input_tokens": estimate(body)}, headers=headers)
    headers["x-edgeproxy-token-count"] = "upstream"
    headers["x-edgeproxy-deployment"] = counted.deployment_id
    return JSONResponse(counted.body, headers=headers)


async def models(request: Request) -> Response:
    """``GET /v1/models``: the public model names and aliases this caller's key may use.

    In Anthropic's shape (a page: ``has_more``, ``first_id``, ``last_id``) when the
    caller speaks Anthropic's API, else OpenAI's.
    """
    _, config, who = await identified(request)  # authenticates
    names = [*config.public_models(), *sorted(config.aliases)]
    usable = [n for n in names if may_use(who, n, config.names_of(config.canonical(n)))]
    if _asks_as_anthropic(request):
        return JSONResponse(
            {
                "data": [_anthropic_model(n) for n in usable],
                "has_more": False,
                "first_id": usable[0] if usable else None,
                "last_id": usable[-1] if usable else None,
            }
        )
    return JSONResponse({"object": "list", "data": [_model(n) for n in usable]})


async def model(request: Request) -> Response:
    """``GET /v1/models/{model}``: one public model, 404 if unknown or not this key's.

    The name may hold ``/`` (``meta/llama-3``), escaped or not.
    """
    _, config, who = await identified(request)
    name = request.path_params["model"]
    canonical = config.canonical(name)
    if canonical not in config.public_models() or not may_use(
        who, name, config.names_of(canonical)
    ):
        raise not_allowed(name).error()
    return JSONResponse(_anthropic_model(name) if _asks_as_anthropic(request) else _model(name))


def _asks_as_anthropic(request: Request) -> bool:
    # Anthropic's API requires the header on every call, and its SDKs always send it;
    # OpenAI's never do.
    return "anthropic-version" in request.headers


def _model(name: str) -> dict[str, Any]:
    """A model object as OpenAI's API shapes it."""
    return {"id": name, "object": "model", "created": 0, "owned_by": "edgeproxy"}


EPOCH = "1970-01-01T00:00:00Z"  # a public model has no release date of its own


def _anthropic_model(name: str) -> dict[str, Any]:
    """A model object as Anthropic's API shapes it."""
    return {"type": "model", "id": name, "display_name": name, "created_at": EPOCH}


async def deployments(request: Request) -> Response:
    """``GET /v1/models/{model}/deployments``: each deployment's availability (admins only)."""
    gateway, config, who = await identified(request)
    if not who.admin:
        raise PermissionDenied("The deployment status view requires an admin key.")
    model = request.path_params["model"]
    return JSONResponse(await gateway.deployment_status(model, config))


async def health(request: Request) -> Response:
    """``GET /health``: the process answers (touches neither the store nor upstreams).

    ``routes_configured`` (001): the deployments in the configuration this process
    holds; null until it first loaded one (a cold process is still alive).
    """
    gateway = request.app.state.gateway.built()
    config = gateway.cached_config() if gateway is not None else None
    routes = len(config.deployments) if config is not None else None
    return JSONResponse({"status": "ok", "routes_configured": routes})
