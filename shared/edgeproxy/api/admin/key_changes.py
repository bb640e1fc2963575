"""``/admin/keys/{id}``: update and rotate a client key (admin role only).

    PATCH /admin/keys/{id}          {"rpm_limit": 120, "budget_usd": null, ...} -> the key
    POST  /admin/keys/{id}/rotate   {"grace_seconds": 3600} -> the key, with its new "key"

An update names only what it changes (``null`` removes a limit, the model
list or the expiry) and is validated like a creation: a model the
configuration does not serve is a 400 naming it. It is conditional on the
version it read (``service/admin/key_lifecycle.py``); send ``If-Match`` or
``version`` to have a stale write refused (409) instead of re-applied. A
rotation's new secret is shown once; the previous one is accepted for
``grace_seconds`` (default 24 h; 0: refused at once), then refused. Both
reach every process within the key cache TTL, as a revocation does, and
are audited (the changed fields; never a secret or its digest).
"""

from __future__ import annotations

import logging
from dataclasses import replace
from datetime import datetime
from typing import Annotated, Any

from pydantic import Field
from starlette.responses import JSONResponse, Response

from edgeproxy.api.admin import team_keys
from edgeproxy.api.admin.guard import AdminCall, AdminRoute, json_body, version_of
from edgeproxy.api.admin.keys import (
    ONE,
    audit_key,
    epoch_seconds,
    found_key,
    key_view,
    owner_only,
    parsed,
)
from edgeproxy.config.base import Positive, Strict
from edgeproxy.config.roles import Role
from edgeproxy.errors import RequestError
from edgeproxy.routing.access import MAX_PARALLEL_REQUESTS, BudgetPeriod
from edgeproxy.service.admin import audit, teams
from edgeproxy.service.admin.key_lifecycle import (
    DEFAULT_GRACE_S,
    Change,
    check_models,
    rotate_key,
    update_key,
)

logger = logging.getLogger(__name__)

MAX_GRACE_S = 90 * 24 * 3600


class UpdateKey(Strict):
    """The body of ``PATCH /admin/keys/{id}``: the fields to change (``null``: remove)."""

    name: Annotated[str, Field(min_length=1, max_length=128)] | None = None
    role: Role | None = None
    models: Annotated[list[Annotated[str, Field(min_length=1)]], Field(max_length=1000)] | None = (
        None
    )
    rpm_limit: Positive | None = None
    tpm_limit: Positive | None = None
    # In flight at once across every gateway process (LiteLLM's name).
    max_parallel_requests: Annotated[int, Field(ge=1, le=MAX_PARALLEL_REQUESTS)] | None = None
    budget_usd: Annotated[float, Field(ge=0, allow_inf_nan=False)] | None = None
    budget_period: BudgetPeriod | None = None
    expires_at: datetime | None = None
    version: int | None = None  # the version it is based on (optional; also If-Match)


class RotateKey(Strict):
    """The body of ``POST /admin/keys/{id}/rotate`` (optional)."""

    grace_seconds: Annotated[float, Field(ge=0, le=MAX_GRACE_S, allow_inf_nan=False)] = (
        DEFAULT_GRACE_S
    )


_NOT_NULL = ("name", "role", "budget_period")  # these cannot be removed


def fields_of(body: UpdateKey, now: float) -> dict[str, Any]:
    """The ``ClientKey`` fields the body changes."""
    given = body.model_fields_set - {"version"}
    for name in _NOT_NULL:
        if name in given and getattr(body, name) is None:
            raise RequestError(f"{name}: cannot be null", param=name)
    fields = {name: getattr(body, name) for name in given}
    if "models" in fields and body.models is not None:
        fields["models"] = frozenset(body.models)
    if "expires_at" in fields:
        expires = epoch_seconds(body.expires_at)
        if expires is not None and expires <= now:
            raise RequestError("expires_at: must be in the future", param="expires_at")
        fields["expires_at"] = expires
    return fields


async def update(call: AdminCall) -> Response:
    """``PATCH /admin/keys/{id}``: change limits, models, role, budget period, expiry."""
    gateway = call.gateway
    raw = await json_body(call)
    sent = "version" in raw or "if-match" in call.request.headers
    expected = version_of(call, raw) if sent else None
    body = parsed(UpdateKey, raw)
    now = gateway.keys.now()
    fields = fields_of(body, now)
    if "models" in fields:
        check_models(body.models, call.config)
    key_id = call.request.path_params["key_id"]
    current = await found_key(gateway, key_id)
    await owner_only(call, "key.update", f"key:{current.id}", current.role, fields.get("role"))
    team_keys.check_rights(call, replace(current, **fields))
    if current.team_id is not None and "models" in fields:
        change = Change(*await teams.update_member_key(gateway.store, key_id, fields, expected))
    else:
        change = await update_key(gateway.store, key_id, fields, expected)
    gateway.keys.forget(change.after.digest)
    before, after = key_view(change.before, now=now), key_view(change.after, now=now)
    changes = [c for c in audit.diff(before, after) if c.get("path") != "version"]
    if changes:
        await audit_key(call, "key.update", change.after, changes)
    logger.info("updated client key id=%s fields=%s", change.after.id, sorted(fields))
    return JSONResponse(after)


async def rotate(call: AdminCall) -> Response:
    """``POST /admin/keys/{id}/rotate``: a new secret (shown once); the old one for the grace."""
    gateway = call.gateway
    raw = await json_body(call) if await call.request.body() else {}
    body = parsed(RotateKey, raw)
    now = gateway.keys.now()
    key_id = call.request.path_params["key_id"]
    current = await found_key(gateway, key_id)
    await owner_only(call, "key.rotate", f"key:{current.id}", current.role)
    change = await rotate_key(gateway.store, key_id, now, body.grace_seconds)
    gateway.keys.forget(change.after.digest)
    view = key_view(change.after, now=now)
    changes = [
        {"path": "prefix", "old": change.before.prefix, "new": change.after.prefix},
        {"path": "previous_secret_until", "new": view["previous_secret_until"]},
    ]
    await audit_key(call, "key.rotate", change.after, changes)
    logger.info("rotated client key id=%s grace=%ss", change.after.id, body.grace_seconds)
    return JSONResponse({**view, "key": change.secret, "grace_seconds": body.grace_seconds})


KEYS = "keys"
ROUTES = [
    AdminRoute(
        "PATCH", ONE, update, "Change a client key's limits, models, role, expiry", KEYS, UpdateKey
    ),
    AdminRoute(
        "POST",
        ONE + "/rotate",
        rotate,
        "A new secret for a client key (shown once)",
        KEYS,
        RotateKey,
    ),
]
