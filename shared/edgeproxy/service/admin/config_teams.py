"""The ``organizations:`` and ``teams:`` sections of a configuration file.

Organizations and teams are table items (``state/teams.py``), not part of the
stored document: an export reads them into two top-level sections, and a
load takes the sections off the document and turns them into writes. A file
without either section leaves them alone (a file from before teams deletes
nothing); a file with one declares that level whole: an id missing from it is
deleted, which is refused while it owns keys (or teams). A team declared under
another organization is moved there (``TeamStore.move_team``: counted out of
the old one, audited as ``team.move``), so a file may move a team and drop its
old, now empty, organization in one load.

Every entry is validated like an admin API body, against the file's own
configuration and the table's keys, before anything is written (a 400 naming
the entry and field). The writes then run one conditional transaction each,
organizations created before their teams and teams deleted before their
organizations; a race lost midway is a 409 (nothing of that step written).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any, Protocol

from pydantic import ValidationError

from edgeproxy.config.loader import TABLE_SECTIONS
from edgeproxy.config.models import GatewayConfig
from edgeproxy.errors import RequestError, VersionConflict
from edgeproxy.routing.hierarchy import Group, Level, models_outside
from edgeproxy.service.admin import audit, teams
from edgeproxy.service.admin.key_lifecycle import check_models
from edgeproxy.service.admin.team_bodies import CreateOrganization, CreateTeam, new_group
from edgeproxy.state.store import AdminStore, TeamStore

SECTIONS = dict(zip(TABLE_SECTIONS, (Level.ORGANIZATION, Level.TEAM), strict=True))
Document = dict[str, Any]


class RoundTripStore(AdminStore, TeamStore, Protocol):
    """What a load with teams needs: the admin calls and the teams'."""


def split(document: Document) -> tuple[Document, dict[Level, list[Any]]]:
    """``document`` without the two sections, and the sections it declares."""
    rest = {k: v for k, v in document.items() if k not in SECTIONS}
    declared = {SECTIONS[k]: v for k, v in document.items() if k in SECTIONS}
    return rest, declared


def _entry(group: Group) -> dict[str, Any]:
    view = teams.group_view(group, counters=False)
    if view["budget_period"] == "total":  # the default: a file states it only when it is not
        del view["budget_period"]
    if view["counter_shards"] == 1:  # the default, likewise
        del view["counter_shards"]
    per_user = view.get("end_user_limits")
    if per_user is not None:
        view["end_user_limits"] = {
            k: v
            for k, v in per_user.items()
            if v is not None and (k, v) != ("budget_period", "total")
        }
    return {k: v for k, v in view.items() if k != "object" and v is not None and v != {}}


async def export_sections(store: TeamStore) -> Document:
    """The sections of the table's organizations and teams (none when there are none)."""
    out: Document = {}
    for section, kind in SECTIONS.items():
        found = await store.list_groups(kind)
        if found:
            out[section] = [_entry(g) for g in found]
    return out


@dataclass(frozen=True, slots=True)
class Step:
    """One write of a load: ``before`` None creates, ``after`` None deletes."""

    kind: Level
    before: Group | None
    after: Group | None


def _parsed(kind: Level, index: int, raw: Any) -> Group:
    section = "teams" if kind is Level.TEAM else "organizations"
    if not isinstance(raw, dict):
        raise RequestError(f"{section}[{index}]: must be a mapping", param=f"{section}[{index}]")
    model = CreateTeam if kind is Level.TEAM else CreateOrganization
    try:
        body = model.model_validate(raw)
        teams.check_id(body.id, "id")
        return new_group(kind, body)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise RequestError(
            f"{section}[{index}].{where}: {first['msg']}", param=f"{section}[{index}].{where}"
        ) from None
    except RequestError as exc:
        raise RequestError(
            f"{section}[{index}].{exc.message}",
            param=f"{section}[{index}].{exc.param}",
            code=exc.code,
        ) from None


def _fail(param: str, message: str, code: str) -> RequestError:
    return RequestError(f"{param}: {message}", param=param, code=code)


async def plan(
    store: RoundTripStore, declared: dict[Level, list[Any]], config: GatewayConfig
) -> list[Step]:
    """The writes that make the table hold ``declared``; a 400 for any entry that breaks a
    rule, before anything is written."""
    stored = {kind: {g.id: g for g in await store.list_groups(kind)} for kind in SECTIONS.values()}
    wanted: dict[Level, dict[str, Group]] = {}
    for kind in SECTIONS.values():
        if kind not in declared:
            continue
        if not isinstance(declared[kind], list):
            section = "teams" if kind is Level.TEAM else "organizations"
            raise _fail(section, "must be a list", "invalid_section")
        entries = [_parsed(kind, i, raw) for i, raw in enumerate(declared[kind])]
        wanted[kind] = {}
        for i, group in enumerate(entries):
            where = f"{'teams' if kind is Level.TEAM else 'organizations'}[{i}]"
            if group.id in wanted[kind]:
                raise _fail(f"{where}.id", f"`{group.id}` is declared twice", "duplicate")
            try:
                check_models(group.models, config)
            except RequestError as exc:
                raise _fail(
                    f"{where}.models", exc.message.removeprefix("models: "), "model_not_found"
                ) from None
            wanted[kind][group.id] = group
    orgs = wanted.get(Level.ORGANIZATION, stored[Level.ORGANIZATION])
    team_set = wanted.get(Level.TEAM, stored[Level.TEAM])
    keys = await store.list_client_keys()
    for i, team in enumerate(team_set.values()):
        where = f"teams[{i}]"
        org = orgs.get(team.parent or "")
        if org is None:
            raise _fail(
                f"{where}.organization_id",
                f"organization `{team.parent}` is neither declared nor stored",
                "unknown_organization",
            )
        if models_outside(team.models, org) != []:
            raise _fail(
                f"{where}.models", f"not within organization `{org.id}`'s", "models_not_allowed"
            )
        for key in keys:
            if key.team_id == team.id and models_outside(key.models, team) != []:
                raise _fail(
                    f"{where}.models",
                    f"its key `{key.id}` uses models outside them",
                    "models_not_allowed",
                )
    # Teams the file moves to another organization leave their old one's count.
    leaving: dict[str, int] = {}
    for team in team_set.values():
        old = stored[Level.TEAM].get(team.id)
        if old is not None and old.parent is not None and old.parent != team.parent:
            leaving[old.parent] = leaving.get(old.parent, 0) + 1
    for kind, declared_groups in wanted.items():
        for gone in set(stored[kind]) - set(declared_groups):
            owner = stored[kind][gone]
            left = leaving.get(gone, 0) if kind is Level.ORGANIZATION else 0
            if owner.members - left > 0:
                raise _fail(
                    "teams" if kind is Level.TEAM else "organizations",
                    f"`{gone}` is not declared but still owns {owner.members} members",
                    "not_empty",
                )
    return _ordered(stored, wanted)


def _ordered(
    stored: dict[Level, dict[str, Group]], wanted: dict[Level, dict[str, Group]]
) -> list[Step]:
    steps: list[Step] = []
    deletes: list[Step] = []
    for kind in (Level.ORGANIZATION, Level.TEAM):
        for group_id, group in wanted.get(kind, {}).items():
            old = stored[kind].get(group_id)
            if old is None:
                steps.append(Step(kind, None, group))
            elif teams.group_view(old, counters=False) != teams.group_view(group, counters=False):
                steps.append(Step(kind, old, group))
        for group_id in sorted(set(stored[kind]) - set(wanted.get(kind, stored[kind]))):
            deletes.append(Step(kind, stored[kind][group_id], None))
    deletes.sort(key=lambda s: s.kind is Level.ORGANIZATION)  # teams first
    return steps + deletes


def changes(steps: list[Step]) -> list[dict[str, Any]]:
    """The compact diff of ``steps``: paths ``organizations.<id>`` and ``teams.<id>``."""
    out: list[dict[str, Any]] = []
    for step in steps:
        section = "teams" if step.kind is Level.TEAM else "organizations"
        group = step.after or step.before
        assert group is not None
        path = f"{section}.{group.id}"
        if step.before is None:
            out.append({"path": path, "new": _entry(group)})
        elif step.after is None:
            out.append({"path": path, "old": _entry(step.before)})
        else:
            for change in audit.diff(_entry(step.before), _entry(step.after)):
                out.append({**change, "path": f"{path}.{change['path']}".rstrip(".")})
    return out


async def apply(
    store: RoundTripStore, steps: list[Step], actor: str, clock: Callable[[], float]
) -> None:
    """Carry out ``steps`` in order, each a conditional transaction with its audit entry."""
    for step in steps:
        won = await _write(store, step, actor, clock())
        if not won:
            group = step.after or step.before
            raise VersionConflict(
                f"{step.kind.value} `{group.id if group else ''}` changed while the file was "
                "being loaded; the steps before it are stored. Export again and retry.",
                param="document",
            )


async def _write(store: RoundTripStore, step: Step, actor: str, now: float) -> bool:
    kind, before, after = step.kind, step.before, step.after
    if after is not None and before is None:
        entry = audit.entry(actor, f"{kind.value}.create", f"{kind.value}:{after.id}", [], now)
        return await store.create_group(replace(after, created_at=now, version=1), entry)
    if before is not None and after is None:
        entry = audit.entry(actor, f"{kind.value}.delete", f"{kind.value}:{before.id}", [], now)
        return await store.delete_group(before, entry)
    if before is None or after is None:
        return True
    if kind is Level.TEAM and after.parent is not None and before.parent != after.parent:
        moved = await _move(store, before, after.parent, actor, now)
        if moved is None:
            return False
        before, step = moved, Step(kind, moved, after)
        if teams.group_view(before, counters=False) == teams.group_view(after, counters=False):
            return True
    kept = replace(
        after, created_at=before.created_at, members=before.members, members_rev=before.members_rev
    )
    target = f"{kind.value}:{before.id}"
    entry = audit.entry(actor, f"{kind.value}.update", target, changes([step]), now)
    return await store.update_group(kept, before.version, entry)


async def _move(
    store: RoundTripStore, team: Group, org_id: str, actor: str, now: float
) -> Group | None:
    """Move ``team`` into ``org_id`` (``TeamStore.move_team``, audited as ``team.move``); the
    team as moved, or None when it or the organization changed since the plan read them."""
    org = await store.get_group(Level.ORGANIZATION, org_id)
    if org is None or models_outside(team.models, org) != []:
        return None
    change = [{"path": "organization_id", "old": team.parent, "new": org_id}]
    entry = audit.entry(actor, "team.move", f"team:{team.id}", change, now)
    if not await store.move_team(team, org, entry):
        return None
    return replace(team, parent=org_id, version=team.version + 1)
