"""``/admin/keys``: create, list, show and revoke client keys (admin role only).

    POST   /admin/keys                 {"name", "role", ...} -> 201 {"id", "key", ...}
    GET    /admin/keys                 {"object": "list", "data": [...]}  (prefixes only)
    GET    /admin/keys/{id}            one key, with its spend and this minute's tokens
    DELETE /admin/keys/{id}            revoke (the item stays, listed as revoked)
    POST   /admin/keys/{id}/revoke     the same

The key itself appears only in the creation answer; the table keeps its
sha256. A revocation is immediate in this process and reaches every other
within the key cache TTL (``EDGEPROXY_KEY_CACHE_TTL_SECONDS``). Errors use
OpenAI's JSON, like every route of the admin API; these routes join the
admin registry (``admin_routes``), so the one admin guard checks them, the
OpenAPI document describes them, and every create and revoke is audited.
"""

from __future__ import annotations

import asyncio
import logging
from datetime import UTC, datetime
from typing import Annotated, Any, TypeVar

from pydantic import Field, ValidationError
from starlette.responses import JSONResponse, Response

from edgeproxy.api.admin import scopes, team_keys
from edgeproxy.api.admin.guard import AdminCall, AdminRoute, json_body
from edgeproxy.config.base import Positive, Strict
from edgeproxy.config.roles import Role
from edgeproxy.errors import NotFound, PermissionDenied, RequestError
from edgeproxy.routing.access import (
    MAX_PARALLEL_REQUESTS,
    BudgetPeriod,
    ClientKey,
    KeyUsage,
    key_status,
    period_end,
    spend_account,
)
from edgeproxy.service.admin import audit
from edgeproxy.service.admin.key_lifecycle import check_models, revoke_key
from edgeproxy.service.gateway import Gateway
from edgeproxy.service.keys import mint_key
from edgeproxy.state.store import AdminStore

logger = logging.getLogger(__name__)

_Body = TypeVar("_Body", bound=Strict)


class CreateKey(Strict):
    """The body of ``POST /admin/keys``; every field but ``name`` is optional."""

    name: Annotated[str, Field(min_length=1, max_length=128)]
    role: Role = Role.FREE
    models: Annotated[list[Annotated[str, Field(min_length=1)]], Field(max_length=1000)] | None = (
        None
    )
    rpm_limit: Positive | None = None
    tpm_limit: Positive | None = None
    # In flight at once across every gateway process (LiteLLM's name).
    max_parallel_requests: Annotated[int, Field(ge=1, le=MAX_PARALLEL_REQUESTS)] | None = None
    budget_usd: Annotated[float, Field(ge=0, allow_inf_nan=False)] | None = None
    budget_period: BudgetPeriod = BudgetPeriod.TOTAL  # when the budget starts again from zero
    expires_at: datetime | None = None  # ISO 8601 (or epoch seconds); naive times are UTC
    team_id: Annotated[str, Field(min_length=1, max_length=63)] | None = None
    # Scoped admin rights (``api/admin/scopes.py``): team:<id>, organization:<id>, gateway.
    admin_of: Annotated[str, Field(min_length=1, max_length=80)] | None = None
    admin_read_only: bool = False


def _time(value: float | None) -> str | None:
    if value is None or value <= 0:
        return None
    return datetime.fromtimestamp(value, UTC).isoformat().replace("+00:00", "Z")


def key_view(key: ClientKey, usage: KeyUsage | None = None, *, now: float) -> dict[str, Any]:
    """A key as the admin API shows it at ``now``: never the key or its digest.

    ``usage``: its counters, read for this budget period (``spend_account``).
    """
    view: dict[str, Any] = {
        "object": "api_key",
        "id": key.id,
        "name": key.name,
        "role": key.role.value,
        "prefix": key.prefix,
        "models": sorted(key.models) if key.models is not None else None,
        "rpm_limit": key.rpm_limit,
        "tpm_limit": key.tpm_limit,
        "max_parallel_requests": key.max_parallel_requests,
        "budget_usd": key.budget_usd,
        "budget_period": key.budget_period.value,
        "expires_at": _time(key.expires_at),
        "revoked": key.revoked,
        "status": key_status(key, now),
        "created_at": _time(key.created_at),
        "last_used_at": _time(key.last_used_at),
        "rotated_at": _time(key.rotated_at),
        "previous_secret_until": _time(key.grace_until),
        "version": key.version,
        "team_id": key.team_id,
        "admin_of": key.admin_of,
        "admin_read_only": key.admin_read_only,
    }
    if usage is not None:
        view["spend_usd"] = usage.spend_usd
        view["period_resets_at"] = _time(period_end(key.budget_period, now))
        view["tokens_this_minute"] = usage.tokens
    return view


async def usage_now(store: AdminStore, key: ClientKey, now: float) -> KeyUsage:
    """The key's tokens this minute and its spend this budget period."""
    return await store.read_key_usage(spend_account(key, now), int(now // 60))


def _parsed(body: dict[str, Any]) -> CreateKey:
    return parsed(CreateKey, body)


def parsed(model: type[_Body], body: dict[str, Any]) -> _Body:
    """``body`` validated as ``model``; a 400 naming the first bad field."""
    try:
        return model.model_validate(body)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or None
        raise RequestError(f"{where or 'body'}: {first['msg']}", param=where) from None


def epoch_seconds(moment: datetime | None) -> float | None:
    """``moment`` as epoch seconds (a naive time is UTC)."""
    if moment is None:
        return None
    return (moment if moment.tzinfo else moment.replace(tzinfo=UTC)).timestamp()


async def audit_key(
    call: AdminCall, action: str, key: ClientKey, changes: list[dict[str, Any]]
) -> None:
    entry = audit.entry(call.actor, action, f"key:{key.id}", changes, call.gateway.now())
    await call.gateway.store.record_audit(entry)


async def owner_only(call: AdminCall, action: str, target: str, *roles: Role | None) -> None:
    """403 (audited) when a caller other than the owner creates, changes or rotates a key
    whose role is or becomes ``admin``: an admin key cannot mint, reshape or take over one
    that would outlive its own revocation (``config.roles``)."""
    if call.who.owner or Role.ADMIN not in roles:
        return
    changes = [{"path": "role", "refused": "owner only", "action": action}]
    entry = audit.entry(call.actor, "key.refused", target, changes, call.gateway.now())
    await call.gateway.store.record_audit(entry)
    raise PermissionDenied(
        "role: admin keys are created and changed only by the gateway's owner (the bootstrap "
        "admin key, or `edgeproxy keys` on the table); an admin key may still revoke one.",
        param="role",
    )


async def create(call: AdminCall) -> Response:
    """``POST /admin/keys``: a new key, shown once (an ``admin`` one by the owner only)."""
    gateway = call.gateway
    body = _parsed(await json_body(call))
    await owner_only(call, "key.create", "key:(new)", body.role)
    now = gateway.keys.now()
    expires_at = epoch_seconds(body.expires_at)
    if expires_at is not None and expires_at <= now:
        raise RequestError("expires_at: must be in the future", param="expires_at")
    check_models(body.models, call.config)
    new = mint_key(
        body.name,
        body.role,
        now,
        models=frozenset(body.models) if body.models is not None else None,
        rpm_limit=body.rpm_limit,
        tpm_limit=body.tpm_limit,
        max_parallel_requests=body.max_parallel_requests,
        budget_usd=body.budget_usd,
        budget_period=body.budget_period,
        expires_at=expires_at,
    )
    if body.team_id is not None or body.admin_of is not None or call.scope is not None:
        new = team_keys.with_team(new, body)
        return await team_keys.create(call, new, key_view(new.key, now=now))
    if not await gateway.store.put_client_key(new.key):  # 2**-128: a digest collision
        raise RequestError("Could not create a unique key; try again.")
    view = key_view(new.key, now=now)
    # The audit names what the key may do; never the key or its digest.
    await audit_key(call, "key.create", new.key, [{"path": "key", "old": None, "new": view}])
    logger.info("created client key id=%s name=%s role=%s", new.key.id, body.name, body.role)
    return JSONResponse({**view, "key": new.secret}, status_code=201)


async def list_keys(call: AdminCall) -> Response:
    """``GET /admin/keys``: every key, by display prefix, with its limits and period's spend."""
    store, now = call.gateway.store, call.gateway.keys.now()
    keys = await scopes.visible_keys(call, await store.list_client_keys())
    usages = await asyncio.gather(*(usage_now(store, k, now) for k in keys))
    data = [key_view(k, u, now=now) for k, u in zip(keys, usages, strict=True)]
    return JSONResponse({"object": "list", "data": data})


async def found_key(gateway: Gateway, key_id: str) -> ClientKey:
    """The key with ``key_id``; 404 if there is none."""
    key = await gateway.store.find_client_key(key_id)
    if key is None:
        raise NotFound(f"No API key has the id `{key_id}`.", param="id")
    return key


async def show(call: AdminCall) -> Response:
    """``GET /admin/keys/{id}``: one key, with its spend and this minute's tokens."""
    gateway = call.gateway
    key = await found_key(gateway, call.request.path_params["key_id"])
    now = gateway.keys.now()
    return JSONResponse(key_view(key, await usage_now(gateway.store, key, now), now=now))


async def revoke(call: AdminCall) -> Response:
    """Revoke a key: refused at once here, within the key cache TTL everywhere.

    Revoking a revoked key answers the same and writes no second audit entry."""
    gateway = call.gateway
    change = await revoke_key(gateway.store, call.request.path_params["key_id"])
    revoked = change.after
    gateway.keys.forget(revoked.digest)
    if change.changed:
        await audit_key(
            call, "key.revoke", revoked, [{"path": "revoked", "old": False, "new": True}]
        )
        logger.info("revoked client key id=%s name=%s", revoked.id, revoked.name)
    return JSONResponse(key_view(revoked, now=gateway.keys.now()))


KEYS = "keys"
ONE = "/admin/keys/{key_id}"
ROUTES = [
    AdminRoute("POST", "/admin/keys", create, "Create a client key (shown once)", KEYS, CreateKey),
    AdminRoute("GET", "/admin/keys", list_keys, "Every client key, by display prefix", KEYS),
    AdminRoute("GET", ONE, show, "One client key, with its spend", KEYS),
    AdminRoute("DELETE", ONE, revoke, "Revoke a client key", KEYS),
    AdminRoute("POST", ONE + "/revoke", revoke, "Revoke a client key", KEYS),
]
