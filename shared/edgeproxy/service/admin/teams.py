"""Organizations and teams through the admin plane: the rules a write must pass, then the write.

Every rule is checked against a fresh read and the write is conditional on
what was read (``state/dynamodb/dynamo_teams.py``), so a lost race writes
nothing and is answered from a re-read. The rules, each a 4xx naming the field:

- ids are slugs (``routing.hierarchy.GROUP_ID``); a team's ``organization_id``
  must name an existing organization (not a team: the levels do not nest,
  so no cycle can be written);
- models must be served by the configuration; a team's must be within its
  organization's; a key moved into a team must name models within the team's
  (a key allowed every model cannot join a team with a list);
- limits are never negative (admission holds every one of them,
  ``service.limits.levels``); ``end_user_limits`` are a team's only;
- an organization with teams, or a team with keys, is not deleted.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any, Protocol

from edgeproxy.config.models import GatewayConfig
from edgeproxy.errors import AlreadyExists, NotFound, RequestError, VersionConflict
from edgeproxy.routing.access import ClientKey
from edgeproxy.routing.hierarchy import (
    GROUP_ID,
    Group,
    Level,
    effective,
    effective_models,
    models_outside,
)
from edgeproxy.service.admin import audit
from edgeproxy.service.admin.key_lifecycle import check_models, current_key
from edgeproxy.state.store import KeyRegistry, TeamStore

ATTEMPTS = 5


class Store(TeamStore, KeyRegistry, Protocol):
    """What these writes need: the teams' calls and the key listing."""


def noun(kind: Level) -> str:
    """How messages name the level."""
    return "Organization" if kind is Level.ORGANIZATION else "Team"


def check_id(value: str, param: str) -> str:
    """``value`` if it is a valid organization or team id; else a 400 naming ``param``."""
    if not GROUP_ID.fullmatch(value):
        raise RequestError(
            f"{param}: must be 1-63 characters of a-z, 0-9, '-' and '_', starting with a "
            "letter or digit",
            param=param,
        )
    return value


async def found(store: TeamStore, kind: Level, group_id: str, param: str = "id") -> Group:
    """The organization or team ``group_id``; 404 if there is none."""
    group = await store.get_group(kind, group_id)
    if group is None:
        raise NotFound(f"{noun(kind)} `{group_id}` does not exist.", param=param)
    return group


async def parent_of(store: TeamStore, org_id: str) -> Group:
    """The organization a team names; a 400 on ``organization_id`` if it is none."""
    check_id(org_id, "organization_id")
    org = await store.get_group(Level.ORGANIZATION, org_id)
    if org is not None:
        return org
    what = (
        "is a team, and teams do not nest"
        if await store.get_group(Level.TEAM, org_id)
        else ("does not exist")
    )
    raise RequestError(
        f"organization_id: organization `{org_id}` {what}; a team belongs to an existing "
        "organization",
        param="organization_id",
        code="unknown_organization",
    )


async def member_team(store: TeamStore, team_id: str) -> Group:
    """The team a key is put into (created in, or moved to); a 400 on ``team_id`` if it is none."""
    check_id(team_id, "team_id")
    team = await store.get_group(Level.TEAM, team_id)
    if team is None:
        raise RequestError(
            f"team_id: team `{team_id}` does not exist", param="team_id", code="unknown_team"
        )
    return team


def fits(models: frozenset[str] | None, group: Group, what: str, param: str) -> None:
    """400 on ``param`` when ``models`` (``what``'s) are not all allowed by ``group``."""
    outside = models_outside(models, group)
    if outside == []:
        return
    detail = "every model" if outside is None else ", ".join(f"`{m}`" for m in outside)
    raise RequestError(
        f"{param}: {what} allows {detail}, which {noun(group.kind).lower()} `{group.id}` does "
        f"not allow (its models: {', '.join(sorted(group.models or ()))})",
        param=param,
        code="models_not_allowed",
    )


async def _check_members(store: Store, group: Group) -> None:
    """A team's keys (an organization's teams) must fit ``group``'s new models."""
    if group.models is None:
        return
    if group.kind is Level.TEAM:
        for key in await store.list_client_keys():
            if key.team_id == group.id:
                fits(key.models, group, f"its key `{key.id}`", "models")
    else:
        for team in await store.list_groups(Level.TEAM):
            if team.parent == group.id:
                fits(team.models, group, f"its team `{team.id}`", "models")


async def create(
    store: Store, group: Group, config: GatewayConfig, actor: str, now: float
) -> Group:
    """Create ``group`` (version 1) after every rule; 409 if the id is taken."""
    check_id(group.id, "id")
    check_models(group.models, config)
    if group.kind is Level.TEAM:
        if group.parent is None:
            raise RequestError("organization_id: a team needs one", param="organization_id")
        fits(group.models, await parent_of(store, group.parent), "the team", "models")
    stored = replace(group, created_at=now, version=1, members=0, members_rev=0)
    view = [{"path": "", "new": group.id}]
    entry = audit.entry(
        actor, f"{group.kind.value}.create", f"{group.kind.value}:{group.id}", view, now
    )
    if await store.create_group(stored, entry):
        return stored
    if await store.get_group(group.kind, group.id) is not None:
        raise AlreadyExists(f"{noun(group.kind)} `{group.id}` already exists.", param="id")
    if group.parent is None or await store.get_group(Level.ORGANIZATION, group.parent):
        # The id is a deleted one's tombstone: an admin key scoped to the old one would
        # cover the new one.
        raise AlreadyExists(
            f"{noun(group.kind)} `{group.id}` was deleted; ids are never reused, so an admin "
            "key scoped to the old one cannot cover a new one. Choose another id.",
            param="id",
        )
    raise RequestError(
        f"organization_id: organization `{group.parent}` was deleted meanwhile",
        param="organization_id",
        code="unknown_organization",
    )


def _conflict(group: Group) -> VersionConflict:
    return VersionConflict(
        f"{noun(group.kind)} `{group.id}` changed meanwhile; re-read it and retry.",
        param="version",
    )


async def _current(store: TeamStore, kind: Level, group_id: str, expected: int | None) -> Group:
    group = await found(store, kind, group_id)
    if expected is not None and group.version != expected:
        raise VersionConflict(
            f"{noun(kind)} `{group_id}` is at version {group.version}, not {expected}: "
            "re-read it first.",
            param="version",
        )
    return group


async def update(
    store: Store,
    kind: Level,
    group_id: str,
    fields: Mapping[str, Any],
    expected: int | None,
    config: GatewayConfig,
    actor: str,
    now: float,
) -> tuple[Group, Group]:
    """Apply ``fields`` (``Group`` names) to the group; (before, after)."""
    if "models" in fields:
        check_models(fields["models"], config)
    for _ in range(ATTEMPTS):
        before = await _current(store, kind, group_id, expected)
        after = replace(before, **fields)
        if "models" in fields:
            if kind is Level.TEAM and before.parent is not None:
                fits(after.models, await parent_of(store, before.parent), "the team", "models")
            await _check_members(store, after)
        changes = audit.diff(_settings(before), _settings(after))
        entry = audit.entry(actor, f"{kind.value}.update", f"{kind.value}:{group_id}", changes, now)
        if await store.update_group(after, before.version, entry):
            return before, replace(after, version=before.version + 1)
        if expected is not None:
            break
    raise _conflict(Group(kind, group_id, ""))


async def delete(
    store: TeamStore, kind: Level, group_id: str, expected: int | None, actor: str, now: float
) -> Group:
    """Delete the group if it owns nothing; 400 naming what it still owns."""
    for _ in range(ATTEMPTS):
        group = await _current(store, kind, group_id, expected)
        if group.members:
            owned = "keys" if kind is Level.TEAM else "teams"
            raise RequestError(
                f"id: {noun(kind).lower()} `{group_id}` still owns {group.members} {owned}; "
                f"move or delete them first",
                param="id",
                code="not_empty",
            )
        entry = audit.entry(actor, f"{kind.value}.delete", f"{kind.value}:{group_id}", [], now)
        if await store.delete_group(group, entry):
            return group
        if expected is not None:
            break
    raise _conflict(Group(kind, group_id, ""))


async def move_key(
    store: TeamStore,
    key_id: str,
    team_id: str | None,
    expected: int | None,
    actor: str,
    now: float,
) -> tuple[ClientKey, ClientKey]:
    """Put the key into team ``team_id`` (None: out of its team); (before, after)."""
    for _ in range(ATTEMPTS):
        key = await current_key(store, key_id, expected)
        team = None
        if team_id is not None:
            team = await member_team(store, team_id)
            fits(key.models, team, f"key `{key_id}`", "team_id")
        if key.team_id == team_id:
            return key, key
        changes = [{"path": "team_id", "old": key.team_id, "new": team_id}]
        entry = audit.entry(actor, "key.move", f"key:{key_id}", changes, now)
        if await store.move_key(key, team, entry):
            return key, replace(key, team_id=team_id, version=key.version + 1)
        if expected is not None:
            break
    raise VersionConflict(f"Key `{key_id}` or its team changed meanwhile; re-read and retry.")


async def update_member_key(
    store: TeamStore, key_id: str, fields: Mapping[str, Any], expected: int | None
) -> tuple[ClientKey, ClientKey]:
    """``key_lifecycle.update_key`` for a key in a team: new models must fit the team, checked
    against the team's version and committed only while it holds; (before, after)."""
    for _ in range(ATTEMPTS):
        key = await current_key(store, key_id, expected)
        if key.revoked:
            raise RequestError(f"Key `{key_id}` is revoked; it cannot be changed.", param="id")
        after = replace(key, **fields, version=key.version + 1)
        team = await store.get_group(Level.TEAM, key.team_id) if key.team_id else None
        if team is None:
            raise VersionConflict(f"Key `{key_id}` left its team meanwhile; retry.")
        fits(after.models, team, f"key `{key_id}`", "models")
        if await store.update_member_key(after, key.version, team):
            return key, after
        if expected is not None:
            break
    raise VersionConflict(f"Key `{key_id}` or its team changed meanwhile; re-read and retry.")


def _settings(group: Group) -> dict[str, Any]:
    return group_view(group, counters=False)


def group_view(group: Group, *, counters: bool = True) -> dict[str, Any]:
    """An organization or team as the admin API shows it."""
    view: dict[str, Any] = {
        "object": group.kind.value,
        "id": group.id,
        "name": group.name,
        "models": sorted(group.models) if group.models is not None else None,
        "rpm_limit": group.rpm_limit,
        "tpm_limit": group.tpm_limit,
        "max_parallel_requests": group.max_parallel_requests,
        "budget_usd": group.budget_usd,
        "budget_period": group.budget_period.value,
        "soft_budget_ratio": group.soft_budget_ratio,
        "tags": dict(group.tags),
    }
    if group.kind is Level.TEAM:
        per_user = group.end_user_limits
        view["end_user_limits"] = (
            None
            if per_user is None
            else {
                "rpm_limit": per_user.rpm_limit,
                "tpm_limit": per_user.tpm_limit,
                "max_parallel_requests": per_user.max_parallel_requests,
                "budget_usd": per_user.budget_usd,
                "budget_period": per_user.budget_period.value,
            }
        )
    if group.kind is Level.TEAM:
        view["organization_id"] = group.parent
    if counters:
        view[("keys" if group.kind is Level.TEAM else "teams")] = group.members
        view["version"] = group.version
    return view


async def effective_view(store: TeamStore, key: ClientKey) -> dict[str, Any]:
    """Each of ``key``'s limits as it applies (the strictest level's) and the level it comes
    from; the models every level allows and which levels narrow them."""
    team = await store.get_group(Level.TEAM, key.team_id) if key.team_id else None
    org = await store.get_group(Level.ORGANIZATION, team.parent) if team and team.parent else None
    limits = {
        name: {"value": e.value, "level": e.level.value if e.level else None}
        for name, e in effective(key, team, org).items()
    }
    models, narrowing = effective_models(key, team, org)
    return {
        "object": "api_key.effective",
        "id": key.id,
        "team_id": key.team_id,
        "organization_id": org.id if org else None,
        "limits": limits,
        "models": {
            "value": sorted(models) if models is not None else None,
            "levels": [level.value for level in narrowing],
        },
    }
