"""What a scoped admin (team admin, organization admin, viewer) may do on each admin route.

Deny by default: a route this table does not name is 403 for every scoped
admin, so a new route is closed to them until someone decides otherwise. A
named route says which scopes may call it and how to find the team and
organization of the object it acts on; the call is allowed only when the
caller's scope covers that object (``AdminScope.covers``). An object that
does not exist, or belongs to no team, is outside every team and organization
scope (403, not 404: a scoped admin learns nothing about ids outside it).
Viewers may only read; a gateway-wide viewer may read every route.

Listings (``GET /admin/keys``, ``/admin/teams``, ``/admin/organizations``)
are allowed and filtered to the caller's scope by their endpoints
(``visible``); so are the usage report and the request log (``GET
/admin/usage``, ``/admin/usage/requests``: held to the caller's team or
organization label, ``api/admin/usage.scope_label``). Not open to scoped
admins: moving keys between teams, moving a team to another organization,
changing or deleting an organization, and everything gateway-level.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from edgeproxy.api.admin.guard import AdminCall, AdminRoute, json_body
from edgeproxy.errors import PermissionDenied
from edgeproxy.routing.access import ClientKey
from edgeproxy.routing.hierarchy import AdminScope, Group, Level

Target = tuple[str | None, str | None]  # (team id, organization id) of the object
Finder = Callable[[AdminCall], Awaitable[Target | None]]
READS = frozenset({"GET", "HEAD"})
TEAM_ADMINS = frozenset({Level.TEAM, Level.ORGANIZATION})
ORG_ADMINS = frozenset({Level.ORGANIZATION})


async def _team(call: AdminCall, team_id: object) -> Target | None:
    if not isinstance(team_id, str):
        return None
    team = await call.gateway.store.get_group(Level.TEAM, team_id)
    return (team.id, team.parent) if team is not None else None


async def team_in_path(call: AdminCall) -> Target | None:
    """The team ``{team_id}`` names."""
    return await _team(call, call.request.path_params.get("team_id"))


async def org_in_path(call: AdminCall) -> Target | None:
    """The organization ``{org_id}`` names."""
    org_id = call.request.path_params.get("org_id")
    org = await call.gateway.store.get_group(Level.ORGANIZATION, str(org_id))
    return (None, org.id) if org is not None else None


async def key_in_path(call: AdminCall) -> Target | None:
    """The team (and organization) of the key ``{key_id}`` names."""
    key = await call.gateway.store.find_client_key(str(call.request.path_params.get("key_id")))
    return await _team(call, key.team_id) if key is not None else None


async def team_in_body(call: AdminCall) -> Target | None:
    """The team a new key's body names (``team_id``)."""
    return await _team(call, (await json_body(call)).get("team_id"))


async def org_in_body(call: AdminCall) -> Target | None:
    """The organization a new team's body names (``organization_id``)."""
    org_id = (await json_body(call)).get("organization_id")
    if not isinstance(org_id, str):
        return None
    org = await call.gateway.store.get_group(Level.ORGANIZATION, org_id)
    return (None, org.id) if org is not None else None


async def listing(call: AdminCall) -> Target | None:
    """A listing: allowed, and filtered by its endpoint."""
    return (None, None)


@dataclass(frozen=True, slots=True)
class Rule:
    """Who below the gateway admin may call one route, and what it acts on."""

    levels: frozenset[Level]
    find: Finder


KEY = "/admin/keys/{key_id}"
RULES: dict[tuple[str, str], Rule] = {
    ("GET", "/admin/keys"): Rule(TEAM_ADMINS, listing),
    ("POST", "/admin/keys"): Rule(TEAM_ADMINS, team_in_body),
    ("GET", KEY): Rule(TEAM_ADMINS, key_in_path),
    ("PATCH", KEY): Rule(TEAM_ADMINS, key_in_path),
    ("DELETE", KEY): Rule(TEAM_ADMINS, key_in_path),
    ("POST", KEY + "/revoke"): Rule(TEAM_ADMINS, key_in_path),
    ("POST", KEY + "/rotate"): Rule(TEAM_ADMINS, key_in_path),
    ("GET", KEY + "/effective"): Rule(TEAM_ADMINS, key_in_path),
    ("GET", "/admin/teams"): Rule(TEAM_ADMINS, listing),
    ("GET", "/admin/teams/{team_id}"): Rule(TEAM_ADMINS, team_in_path),
    ("PATCH", "/admin/teams/{team_id}"): Rule(TEAM_ADMINS, team_in_path),
    ("POST", "/admin/teams"): Rule(ORG_ADMINS, org_in_body),
    ("DELETE", "/admin/teams/{team_id}"): Rule(ORG_ADMINS, team_in_path),
    ("GET", "/admin/organizations"): Rule(ORG_ADMINS, listing),
    ("GET", "/admin/organizations/{org_id}"): Rule(ORG_ADMINS, org_in_path),
    ("GET", "/admin/usage"): Rule(TEAM_ADMINS, listing),
    ("GET", "/admin/usage/requests"): Rule(TEAM_ADMINS, listing),
}


def _denied(route: AdminRoute) -> PermissionDenied:
    return PermissionDenied(
        f"{route.method} {route.path}: outside this key's admin scope.", param="authorization"
    )


async def authorize(route: AdminRoute, call: AdminCall) -> None:
    """403 unless the scoped caller of ``call`` may call ``route`` on its object."""
    scope = call.scope
    if scope is None:
        return
    reading = route.method in READS
    if scope.read_only and not reading:
        raise _denied(route)
    if scope.level is None:  # a gateway-wide viewer
        return
    rule = RULES.get((route.method, route.path))
    if rule is None or scope.level not in rule.levels:
        raise _denied(route)
    target = await rule.find(call)
    if target is None or (target != (None, None) and not scope.covers(*target)):
        raise _denied(route)


def sees_group(scope: AdminScope | None, group: Group) -> bool:
    """Whether a listing shows ``group`` to ``scope``."""
    if scope is None or scope.level is None:
        return True
    if group.kind is Level.TEAM:
        return scope.covers(group.id, group.parent)
    return scope.level is Level.ORGANIZATION and group.id == scope.id


async def visible_keys(call: AdminCall, keys: list[ClientKey]) -> list[ClientKey]:
    """The keys of ``keys`` the caller's scope covers."""
    scope = call.scope
    if scope is None or scope.level is None:
        return keys
    parents = {t.id: t.parent for t in await call.gateway.store.list_groups(Level.TEAM)}
    return [
        k for k in keys if k.team_id is not None and scope.covers(k.team_id, parents.get(k.team_id))
    ]
