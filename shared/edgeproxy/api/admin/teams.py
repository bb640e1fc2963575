"""``/admin/organizations``, ``/admin/teams``: the levels above client keys (admin role only).

    POST   /admin/organizations                {"id", "name", "models", "tags"} -> 201
    GET    /admin/organizations                {"object": "list", "data": [...]}
    GET    /admin/organizations/{org_id}       one organization (ETag: its version)
    PATCH  /admin/organizations/{org_id}       the fields to change (If-Match)
    DELETE /admin/organizations/{org_id}       only without teams (If-Match or ?version=)
    ... the same under /admin/teams, with "organization_id" on creation
    PUT    /admin/keys/{key_id}/team           {"team_id": "a" | null} (If-Match: the key's)
    GET    /admin/keys/{key_id}/effective      each limit, the strictest, and its level

Rules and races: ``service/admin/teams.py``. Every write is versioned and
audited in the same transaction as the change.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field
from starlette.responses import JSONResponse, Response

from edgeproxy.api.admin.guard import AdminCall, AdminRoute, json_body, sent_version, versioned
from edgeproxy.api.admin.keys import ONE, found_key, parsed
from edgeproxy.config.base import Strict
from edgeproxy.errors import RequestError
from edgeproxy.routing.access import MAX_PARALLEL_REQUESTS, BudgetPeriod
from edgeproxy.routing.hierarchy import MAX_TAGS, Group, Level
from edgeproxy.service.admin import teams

NonNegative = Annotated[int, Field(ge=0)]
Name = Annotated[str, Field(min_length=1, max_length=128)]
Models = Annotated[
    list[Annotated[str, Field(min_length=1, max_length=256)]], Field(max_length=1000)
]
Tags = Annotated[
    dict[Annotated[str, Field(min_length=1, max_length=64)], Annotated[str, Field(max_length=256)]],
    Field(max_length=MAX_TAGS),
]


class GroupFields(Strict):
    """What an organization or team carries (limits: refused until enforced)."""

    models: Models | None = None
    rpm_limit: NonNegative | None = None
    tpm_limit: NonNegative | None = None
    max_parallel_requests: Annotated[int, Field(ge=0, le=MAX_PARALLEL_REQUESTS)] | None = None
    budget_usd: Annotated[float, Field(ge=0, allow_inf_nan=False)] | None = None
    budget_period: BudgetPeriod | None = None
    soft_budget_ratio: Annotated[float, Field(ge=0, le=1, allow_inf_nan=False)] | None = None
    tags: Tags | None = None


class CreateOrganization(GroupFields):
    """The body of ``POST /admin/organizations``."""

    id: Annotated[str, Field(min_length=1, max_length=63)]
    name: Name


class CreateTeam(CreateOrganization):
    """The body of ``POST /admin/teams``."""

    organization_id: Annotated[str, Field(min_length=1, max_length=63)]


class UpdateGroup(GroupFields):
    """The body of a ``PATCH``: the fields to change (``null``: remove)."""

    name: Name | None = None
    version: int | None = None


class MoveKey(Strict):
    """The body of ``PUT /admin/keys/{key_id}/team``."""

    team_id: Annotated[str, Field(min_length=1, max_length=63)] | None
    version: int | None = None


def group_fields(body: GroupFields) -> dict[str, Any]:
    """The ``Group`` fields a body sets (a 400 for a limit not enforced yet)."""
    given = body.model_fields_set - {"version", "id", "organization_id"}
    fields = {name: getattr(body, name) for name in given}
    if "name" in fields and fields["name"] is None:
        raise RequestError("name: cannot be null", param="name")
    teams.refuse_unenforced(fields)
    if "models" in fields and fields["models"] is not None:
        fields["models"] = frozenset(fields["models"])
    if "tags" in fields:
        fields["tags"] = dict(fields["tags"] or {})
    fields.pop("budget_period", None)  # only the default passes ``refuse_unenforced``
    return fields


def new_group(kind: Level, body: CreateOrganization) -> Group:
    """The organization or team a creation body describes."""
    fields = group_fields(body)
    return Group(
        kind=kind,
        id=body.id,
        name=body.name,
        parent=body.organization_id if isinstance(body, CreateTeam) else None,
        **{k: v for k, v in fields.items() if k != "name"},
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
        found = await call.gateway.store.list_groups(kind)
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
    fields = group_fields(parsed(UpdateGroup, raw))
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
