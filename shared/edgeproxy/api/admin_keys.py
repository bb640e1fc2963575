"""``/admin/keys``: create, list, show and revoke client keys (admin role only).

    POST   /admin/keys                 {"name", "role", ...} -> 201 {"id", "key", ...}
    GET    /admin/keys                 {"object": "list", "data": [...]}  (prefixes only)
    GET    /admin/keys/{id}            one key, with its spend and this minute's tokens
    DELETE /admin/keys/{id}            revoke (the item stays, listed as revoked)
    POST   /admin/keys/{id}/revoke     the same

The key itself appears only in the creation answer; the table keeps its
sha256. A revocation is immediate in this process and reaches every other
within the key cache TTL (``EDGEPROXY_KEY_CACHE_TTL_SECONDS``). Errors use
OpenAI's JSON, like every route of the admin API.
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime
from typing import Annotated, Any

from pydantic import Field, ValidationError
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from edgeproxy.api.errors import guarded
from edgeproxy.api.parsing import read_json_object
from edgeproxy.api.pipeline import identified
from edgeproxy.config.base import Positive, Strict
from edgeproxy.config.roles import Role
from edgeproxy.errors import AuthenticationError, NotFound, PermissionDenied, RequestError
from edgeproxy.routing.access import ClientKey, KeyUsage
from edgeproxy.service.gateway import Gateway
from edgeproxy.service.keys import mint_key

logger = logging.getLogger(__name__)

MAX_BODY_BYTES = 64 * 1024


class CreateKey(Strict):
    """The body of ``POST /admin/keys``; every field but ``name`` is optional."""

    name: Annotated[str, Field(min_length=1, max_length=128)]
    role: Role = Role.FREE
    models: Annotated[list[Annotated[str, Field(min_length=1)]], Field(max_length=1000)] | None = (
        None
    )
    rpm_limit: Positive | None = None
    tpm_limit: Positive | None = None
    budget_usd: Annotated[float, Field(ge=0, allow_inf_nan=False)] | None = None
    expires_at: datetime | None = None  # ISO 8601 (or epoch seconds); naive times are UTC


def _time(value: float | None) -> str | None:
    if value is None or value <= 0:
        return None
    return datetime.fromtimestamp(value, UTC).isoformat().replace("+00:00", "Z")


def key_view(key: ClientKey, usage: KeyUsage | None = None) -> dict[str, Any]:
    """A key as the admin API shows it: never the key or its digest."""
    view: dict[str, Any] = {
        "object": "api_key",
        "id": key.id,
        "name": key.name,
        "role": key.role.value,
        "prefix": key.prefix,
        "models": sorted(key.models) if key.models is not None else None,
        "rpm_limit": key.rpm_limit,
        "tpm_limit": key.tpm_limit,
        "budget_usd": key.budget_usd,
        "expires_at": _time(key.expires_at),
        "revoked": key.revoked,
        "created_at": _time(key.created_at),
        "last_used_at": _time(key.last_used_at),
    }
    if usage is not None:
        view["spend_usd"] = usage.spend_usd
        view["tokens_this_minute"] = usage.tokens
    return view


async def _admin(request: Request) -> Gateway:
    """The gateway, for an admin caller only (401 without a key, 403 for a client key)."""
    gateway, _, who = await identified(request)
    if who.anonymous:
        raise AuthenticationError("You didn't provide an API key.")
    if not who.admin:
        raise PermissionDenied("The admin API requires an admin key.")
    return gateway


def _parsed(body: dict[str, Any]) -> CreateKey:
    try:
        return CreateKey.model_validate(body)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or None
        raise RequestError(f"{where or 'body'}: {first['msg']}", param=where) from None


def epoch_seconds(moment: datetime | None) -> float | None:
    """``moment`` as epoch seconds (a naive time is UTC)."""
    if moment is None:
        return None
    return (moment if moment.tzinfo else moment.replace(tzinfo=UTC)).timestamp()


async def create(request: Request) -> Response:
    """``POST /admin/keys``: a new key, shown once."""
    gateway = await _admin(request)
    body = _parsed(await read_json_object(request, MAX_BODY_BYTES))
    now = gateway.keys.now()
    expires_at = epoch_seconds(body.expires_at)
    if expires_at is not None and expires_at <= now:
        raise RequestError("expires_at: must be in the future", param="expires_at")
    new = mint_key(
        body.name,
        body.role,
        now,
        models=frozenset(body.models) if body.models is not None else None,
        rpm_limit=body.rpm_limit,
        tpm_limit=body.tpm_limit,
        budget_usd=body.budget_usd,
        expires_at=expires_at,
    )
    if not await gateway.store.put_client_key(new.key):  # 2**-128: a digest collision
        raise RequestError("Could not create a unique key; try again.")
    logger.info("created client key id=%s name=%s role=%s", new.key.id, body.name, body.role)
    return JSONResponse({**key_view(new.key), "key": new.secret}, status_code=201)


async def collection(request: Request) -> Response:
    """``GET /admin/keys`` (the list) and ``POST /admin/keys`` (create)."""
    if request.method == "POST":
        return await create(request)
    gateway = await _admin(request)
    keys = await gateway.store.list_client_keys()
    return JSONResponse({"object": "list", "data": [key_view(k) for k in keys]})


async def _found(gateway: Gateway, key_id: str) -> ClientKey:
    key = await gateway.store.find_client_key(key_id)
    if key is None:
        raise NotFound(f"No API key has the id `{key_id}`.", param="id")
    return key


async def item(request: Request) -> Response:
    """``GET /admin/keys/{id}`` (one key, with its usage) and ``DELETE`` (revoke)."""
    if request.method == "DELETE":
        return await revoke(request)
    gateway = await _admin(request)
    key = await _found(gateway, request.path_params["key_id"])
    usage = await gateway.store.read_key_usage(key.id, int(gateway.keys.now() // 60))
    return JSONResponse(key_view(key, usage))


async def revoke(request: Request) -> Response:
    """Revoke a key: refused at once here, within the key cache TTL everywhere."""
    gateway = await _admin(request)
    key_id = request.path_params["key_id"]
    revoked = await gateway.store.revoke_client_key(key_id)
    if revoked is None:
        raise NotFound(f"No API key has the id `{key_id}`.", param="id")
    gateway.keys.forget(revoked.digest)
    logger.info("revoked client key id=%s name=%s", revoked.id, revoked.name)
    return JSONResponse(key_view(revoked))


def openapi_paths() -> dict[str, Any]:
    """The ``/admin/keys`` part of the admin API's OpenAPI document (``paths`` entries)."""
    error = {"description": "OpenAI error JSON", "content": {"application/json": {}}}
    refused = {"401": error, "403": error}
    body = {
        "required": True,
        "content": {"application/json": {"schema": CreateKey.model_json_schema()}},
    }
    key_id = [{"name": "key_id", "in": "path", "required": True, "schema": {"type": "string"}}]
    return {
        "/admin/keys": {
            "post": {
                "summary": "Create a client key (the key is in this answer only)",
                "requestBody": body,
                "responses": {"201": {"description": "the new key"}, "400": error, **refused},
            },
            "get": {
                "summary": "List client keys",
                "responses": {"200": {"description": "keys"}, **refused},
            },
        },
        "/admin/keys/{key_id}": {
            "parameters": key_id,
            "get": {
                "summary": "One key, with its spend",
                "responses": {"200": {"description": "the key"}, "404": error, **refused},
            },
            "delete": {
                "summary": "Revoke a key",
                "responses": {"200": {"description": "revoked"}, "404": error, **refused},
            },
        },
        "/admin/keys/{key_id}/revoke": {
            "parameters": key_id,
            "post": {
                "summary": "Revoke a key",
                "responses": {"200": {"description": "revoked"}, "404": error, **refused},
            },
        },
    }


ROUTES: list[BaseRoute] = [
    Route("/admin/keys", guarded(collection), methods=["GET", "POST"]),
    Route("/admin/keys/{key_id}", guarded(item), methods=["GET", "DELETE"]),
    Route("/admin/keys/{key_id}/revoke", guarded(revoke), methods=["POST"]),
]
