"""The admin API's shared parts: the one admin guard, the route registry, bodies and versions.

Every ``/admin/*`` route and ``/health/deep`` is an ``AdminRoute`` whose
endpoint receives an ``AdminCall``: ``admin_call`` builds it, and it is the
only place admin rights are checked (a missing or unknown key is 401, a key
without admin rights 403, in OpenAI's error format). A key with scoped
rights (a team or organization admin, a viewer) gets a call with its
``scope``, and ``scopes.authorize`` then decides the route. Each admin module
contributes a ``ROUTES`` list; ``admin_routes.ROUTE_TABLES`` collects them
for the app and for the OpenAPI document (``GET /admin/openapi.json``).

Writes are versioned: the request carries the version it read, in
``If-Match`` (``"3"``, as the ``ETag`` of the read) or a ``version`` field
(``?version=3`` for a ``DELETE``);
a stale one is 409, none at all is 428 ``version_required`` (except where a
route is ``unconditional``: ``PUT /admin/router-settings`` as 000 sends it).
"""

from __future__ import annotations

import copy
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from edgeproxy.api.identity import Identity
from edgeproxy.api.parsing import read_json_object
from edgeproxy.api.pipeline import identified
from edgeproxy.config.models import GatewayConfig
from edgeproxy.errors import AuthenticationError, PermissionDenied, RequestError, VersionRequired
from edgeproxy.routing.hierarchy import AdminScope, scope_of
from edgeproxy.service.gateway import Gateway

ADMIN_BODY_BYTES = 1024 * 1024


@dataclass(frozen=True, slots=True)
class AdminCall:
    """An authenticated admin request: the gateway, its cached configuration, who calls."""

    request: Request
    gateway: Gateway
    config: GatewayConfig
    who: Identity
    actor: str  # what the audit log records: the key's name or hash prefix, never the key
    # A scoped admin's rights (``api/admin/scopes.py`` decides each route); None: gateway admin.
    scope: AdminScope | None = None


AdminEndpoint = Callable[[AdminCall], Awaitable[Response]]


@dataclass(frozen=True, slots=True)
class AdminRoute:
    """One admin operation: what the app serves and what the OpenAPI document describes.

    ``body``: the pydantic model its JSON body is validated with (None: no
    body). ``versioned``: a write that needs the version it read.
    ``query``: query parameters as ``(name, json type, description)``.
    ``unconditional``: a versioned write that may also be sent without a
    version, last writer wins (no 428).
    """

    method: str
    path: str
    endpoint: AdminEndpoint
    summary: str
    tag: str
    body: type[BaseModel] | None = None
    versioned: bool = False
    query: Sequence[tuple[str, str, str]] = field(default_factory=tuple)
    unconditional: bool = False


def actor_of(who: Identity, config: GatewayConfig) -> str:
    """The audit name of an admin caller: its key's name (and id); never a digest of the key."""
    if who.key is not None:
        return f"{who.key.name} ({who.key.id})"
    if who.name:
        return who.name
    return "unnamed admin key"


async def admin_call(request: Request) -> AdminCall:
    """Authenticate an admin request: 401 without a valid key, 403 for a non-admin key."""
    gateway, config, who = await identified(request)
    if who.anonymous or not who.caller.startswith("key:"):
        # No key, or (with authentication off for a local demo) a key nobody issued.
        raise AuthenticationError(
            "You didn't provide an API key; this endpoint needs an admin key."
        )
    if who.admin:
        return AdminCall(request, gateway, config, who, actor_of(who, config))
    scope = scope_of(who.key) if who.key is not None else None
    if scope is None:
        raise PermissionDenied("This endpoint requires an admin key.")
    return AdminCall(request, gateway, config, who, actor_of(who, config), scope)


async def json_body(call: AdminCall) -> dict[str, Any]:
    """The request's JSON object body (at most 1 MiB); a fresh copy on every call, since the
    scope check may read it before the endpoint (and endpoints pop from it)."""
    state = call.request.state
    if not hasattr(state, "admin_body"):
        state.admin_body = await read_json_object(call.request, ADMIN_BODY_BYTES)
    body: dict[str, Any] = copy.deepcopy(state.admin_body)
    return body


def _header_version(request: Request) -> int | None:
    raw = request.headers.get("if-match")
    if raw is None:
        return None
    tag = raw.strip().removeprefix("W/").strip('"')
    if not tag.isdigit():
        raise RequestError('If-Match must be a version, as in the ETag: "3".', param="If-Match")
    return int(tag)


def version_of(call: AdminCall, body: dict[str, Any] | None = None) -> int:
    """The version a write was based on: ``If-Match``, the body's ``version`` (removed from
    it) or, for a write without a body, the ``version`` query parameter; 428 if none."""
    version = sent_version(call, body)
    if version is None:
        raise VersionRequired(
            "This write needs the version it is based on: send If-Match (the ETag of the "
            "GET) or a `version` field.",
            param="version",
        )
    return version


def sent_version(call: AdminCall, body: dict[str, Any] | None = None) -> int | None:
    """As ``version_of``, but None when the write names no version at all."""
    header = _header_version(call.request)
    sent: Any = None if body is None else body.pop("version", None)
    query = call.request.query_params.get("version")
    if body is None and query is not None:
        sent = int(query) if query.isdigit() else query
    if sent is not None and (isinstance(sent, bool) or not isinstance(sent, int) or sent < 0):
        raise RequestError("`version` must be a non-negative integer.", param="version")
    if header is not None and sent is not None and header != sent:
        raise RequestError("If-Match and `version` disagree.", param="version")
    return header if header is not None else sent


def versioned(payload: dict[str, Any], version: int, status: int = 200) -> JSONResponse:
    """A JSON answer carrying ``version`` in the body and as the ETag."""
    return JSONResponse({**payload, "version": version}, status, headers={"etag": f'"{version}"'})
