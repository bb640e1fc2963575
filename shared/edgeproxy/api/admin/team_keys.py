"""Keys with a team or scoped admin rights: ``POST /admin/keys`` with ``team_id``/``admin_of``.

A key created into a team is one transaction (``TeamStore.create_member_key``):
the key, the team's member count, its audit entry; its models must fit the
team's as read. A scoped admin (``scopes.py``) mints only into a team its
scope covers, and never a key with more rights than its own
(``hierarchy.more_rights``): the same check guards its updates.
"""

from __future__ import annotations

import logging
from dataclasses import replace
from typing import Any

from starlette.responses import JSONResponse, Response

from edgeproxy.api.admin.guard import AdminCall
from edgeproxy.errors import PermissionDenied, RequestError, VersionConflict
from edgeproxy.routing.access import ClientKey
from edgeproxy.routing.hierarchy import GATEWAY, more_rights, scope_of
from edgeproxy.service.admin import audit, teams
from edgeproxy.service.keys import NewKey

logger = logging.getLogger(__name__)


def check_rights(call: AdminCall, key: ClientKey) -> None:
    """403 naming the field when a scoped admin would give ``key`` more rights than its own."""
    minter = call.who.key
    if call.scope is None or minter is None:
        return
    field = more_rights(minter, key)
    if field is not None:
        raise PermissionDenied(
            f"{field}: a scoped admin cannot give a key more rights than its own key has",
            param=field,
        )


def check_admin_of(key: ClientKey) -> None:
    """400 unless ``key.admin_of`` is a scope ``scope_of`` reads back."""
    if key.admin_of is None:
        return
    if scope_of(key) is None:
        raise RequestError(
            f"admin_of: `team:<id>`, `organization:<id>`, or `{GATEWAY}` with admin_read_only",
            param="admin_of",
        )


async def create(call: AdminCall, new: NewKey, view: dict[str, Any]) -> Response:
    """Store ``new`` (its ``team_id`` or ``admin_of`` set) after the team and rights checks."""
    key, store, now = new.key, call.gateway.store, call.gateway.now()
    check_admin_of(key)
    scope = scope_of(key)
    if scope is not None and scope.level is not None:
        group = await store.get_group(scope.level, scope.id or "")
        if group is None:
            raise RequestError(f"admin_of: no {scope.level.value} `{scope.id}`", param="admin_of")
    check_rights(call, key)
    entry = audit.entry(
        call.actor, "key.create", f"key:{key.id}", [{"path": "key", "new": view}], now
    )
    if key.team_id is None:
        if not await store.put_client_key(key):
            raise RequestError("Could not create a unique key; try again.")
        await store.record_audit(entry)
    else:
        team = await teams.member_team(store, key.team_id)
        teams.fits(key.models, team, "the key", "models")
        if not await store.create_member_key(key, team, entry):
            raise VersionConflict(f"Team `{team.id}` changed meanwhile; retry.", param="team_id")
    logger.info("created client key id=%s team=%s", key.id, key.team_id)
    return JSONResponse({**view, "key": new.secret}, status_code=201)


def with_team(new: NewKey, body: Any) -> NewKey:
    """``new`` with the body's ``team_id``, ``admin_of`` and ``admin_read_only``."""
    key = replace(
        new.key,
        team_id=body.team_id,
        admin_of=body.admin_of,
        admin_read_only=body.admin_read_only,
    )
    return NewKey(new.secret, key)
