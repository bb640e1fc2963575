"""``/admin/organizations``, ``/admin/teams``: the levels above client keys (admin role only).

    POST   /admin/organizations                {"id", "name", "models", "tags"} -> 201
    GET    /admin/organizations                {"object": "list", "data": [...]}
    GET    /admin/organizations/{org_id}       one organization (ETag: its version)
    PATCH  /admin/organizations/{org_id}       the fields to change (If-Match)
    DELETE /admin/organizations/{org_id}       only without teams (If-Match or ?version=)
    ... the same under /admin/teams, with "organization_id" on creation
    PUT    /admin/teams/{team_id}/organization {"organization_id": "b"} (If-Match: the team's)
    PUT    /admin/keys/{key_id}/team           {"team_id": "a" | null} (If-Match: the key's)
    GET    /admin/keys/{key_id}/effective      each limit, the strictest, and its level

Rules and races: ``service/admin/teams.py``. Every write is versioned and
audited in the same transaction as the change.
"""

from __future__ import annotations

from typing import Any

from starlette.responses import JSONResponse, Response

from edgeproxy.api.admin import scopes
from edgeproxy.api.admin.guard import AdminCall, AdminRoute, json_body, sent_version, versioned
from edgeproxy.api.admin.keys import ONE, found_key, parsed
from edgeproxy.errors import PermissionDenied
from edgeproxy.routing.hierarchy import Level
from edgeproxy.service.admin import team_moves, teams
from edgeproxy.service.admin.team_bodies import (
    CreateOrganization,
    CreateTeam,
    MoveKey,
    MoveTeam,
    UpdateGroup,
    group_fields,
    new_group,
)

# What a team admin may not change on its own team (its name, models and tags it may).
LIMIT_FIELDS = (
    "rpm_limit",
    "tpm_limit",
    "max_parallel_requests",
    "budget_usd",
    "budget_period",
    "soft_budget_ratio",
    "end_user_limits",
    "counter_shards",
)


def _kind(call: AdminCall) -> Level:
    return Level.TEAM if "team_id" in call.request.path_params else Level.ORGANIZATION


def _id(call: AdminCall) -> str:
    params = call.request.path_params
    return str(params.get("team_id") or params.get("org_id"))


def _create(kind: Level) -> Any:
    async def create(call: AdminCall) -> Response:
        raw = await json_body(call)
        body = parsed(CreateTeam if kind is Level.TEAM else CreateOrganization, raw)
        group = new_group(kind, body)
        gateway = call.gateway
        stored = await teams.create(gateway.store, group, call.config, call.actor, gateway.now())
        return versioned(teams.group_view(stored), stored.version, 201)

    create.__name__ = f"create_{kind.value}"
    return create


def _list(kind: Level) -> Any:
    async def list_groups(call: AdminCall) -> Response:
        found = [
            g
            for g in await call.gateway.store.list_groups(kind)
            if scopes.sees_group(call.scope, g)
        ]
        return JSONResponse({"object": "list", "data": [teams.group_view(g) for g in found]})

    list_groups.__name__ = f"list_{kind.value}s"
    return list_groups


async def show(call: AdminCall) -> Response:
    """One organization or team."""
    group = await teams.found(call.gateway.store, _kind(call), _id(call))
    return versioned(teams.group_view(group), group.version)


async def change(call: AdminCall) -> Response:
    """Change an organization's or team's name, models or tags."""
    raw = await json_body(call)
    expected = sent_version(call, raw)
    fields = group_fields(parsed(UpdateGroup, raw), _kind(call))
    scope = call.scope
    if scope is not None and scope.level is Level.TEAM:
        # The team's limits are what its organization's admins grant it, not its own admins.
        for name in LIMIT_FIELDS:
            if name in fields:
                raise PermissionDenied(
                    f"{name}: a team admin cannot change its own team's limits; an "
                    "organization or gateway admin sets them",
                    param=name,
                )
    gateway = call.gateway
    _, after = await teams.update(
        gateway.store,
        _kind(call),
        _id(call),
        fields,
        expected,
        call.config,
        call.actor,
        gateway.now(),
    )
    return versioned(teams.group_view(after), after.version)


async def remove(call: AdminCall) -> Response:
    """Delete an organization without teams, or a team without keys."""
    expected = sent_version(call)
    gateway = call.gateway
    gone = await teams.delete(
        gateway.store, _kind(call), _id(call), expected, call.actor, gateway.now()
    )
    return JSONResponse({"object": gone.kind.value, "id": gone.id, "deleted": True})


async def move(call: AdminCall) -> Response:
    """``PUT /admin/keys/{key_id}/team``: move a key into a team, or out of its team."""
    raw = await json_body(call)
    expected = sent_version(call, raw)
    body = parsed(MoveKey, raw)
    gateway = call.gateway
    key_id = call.request.path_params["key_id"]
    _, after = await teams.move_key(
        gateway.store, key_id, body.team_id, expected, call.actor, gateway.now()
    )
    gateway.keys.forget(after.digest)
    return versioned({"object": "api_key", "id": after.id, "team_id": after.team_id}, after.version)


async def move_team(call: AdminCall) -> Response:
    """``PUT /admin/teams/{team_id}/organization``: move a team to another organization."""
    raw = await json_body(call)
    expected = sent_version(call, raw)
    body = parsed(MoveTeam, raw)
    gateway = call.gateway
    _, after = await team_moves.move_team(
        gateway.store, _id(call), body.organization_id, expected, call.actor, gateway.now()
    )
    return versioned(teams.group_view(after), after.version)


async def effective_limits(call: AdminCall) -> Response:
    """``GET /admin/keys/{key_id}/effective``: each limit as it applies, and its level."""
    key = await found_key(call.gateway, call.request.path_params["key_id"])
    return JSONResponse(await teams.effective_view(call.gateway.store, key))


ORGS, TEAMS = "/admin/organizations", "/admin/teams"
ORG, TEAM = ORGS + "/{org_id}", TEAMS + "/{team_id}"
TAG = "teams"
ROUTES = [
    AdminRoute(
        "POST", ORGS, _create(Level.ORGANIZATION), "Create an organization", TAG, CreateOrganization
    ),
    AdminRoute("GET", ORGS, _list(Level.ORGANIZATION), "Every organization", TAG),
    AdminRoute("GET", ORG, show, "One organization", TAG),
    AdminRoute(
        "PATCH",
        ORG,
        change,
        "Change an organization",
        TAG,
        UpdateGroup,
        versioned=True,
        unconditional=True,
    ),
    AdminRoute(
        "DELETE",
        ORG,
        remove,
        "Delete an organization without teams",
        TAG,
        versioned=True,
        unconditional=True,
    ),
    AdminRoute("POST", TEAMS, _create(Level.TEAM), "Create a team", TAG, CreateTeam),
    AdminRoute("GET", TEAMS, _list(Level.TEAM), "Every team", TAG),
    AdminRoute("GET", TEAM, show, "One team", TAG),
    AdminRoute(
        "PATCH", TEAM, change, "Change a team", TAG, UpdateGroup, versioned=True, unconditional=True
    ),
    AdminRoute(
        "DELETE",
        TEAM,
        remove,
        "Delete a team without keys",
        TAG,
        versioned=True,
        unconditional=True,
    ),
    AdminRoute(
        "PUT",
        TEAM + "/organization",
        move_team,
        "Move a team to another organization",
        TAG,
        MoveTeam,
        versioned=True,
        unconditional=True,
    ),
    AdminRoute(
        "PUT",
        ONE + "/team",
        move,
        "Move a key into or out of a team",
        TAG,
        MoveKey,
        versioned=True,
        unconditional=True,
    ),
    AdminRoute(
        "GET",
        ONE + "/effective",
        effective_limits,
        "A key's effective limits and the level each comes from",
        TAG,
    ),
]
