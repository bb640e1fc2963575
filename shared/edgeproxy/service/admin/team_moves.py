"""Moving a team to another organization: the rules, then one conditional transaction.

The rules, each a 4xx naming ``organization_id`` (the field the move sets):

- the organization must exist (``unknown_organization``; a team's id there is
  refused too: the levels do not nest, so no cycle can be written);
- the team's models must all be allowed by the new organization
  (``models_not_allowed``; a team allowed every model cannot join an
  organization with a list). Its keys' models are within the team's, so they
  need no check of their own.

The write (``TeamStore.move_team``) moves the team at the version read, counts
it out of its old organization and into the new one at the version whose
models were checked, and stores the audit entry, all in one transaction: a
lost race writes nothing, is re-read and judged again (``ATTEMPTS``), or is a
409 when the caller named the version it read. Only a gateway admin may move a
team (``api/admin/scopes.py`` names no rule for it: an organization admin
covers one organization, not both ends of the move).
"""

from __future__ import annotations

from dataclasses import replace

from edgeproxy.errors import RequestError, VersionConflict
from edgeproxy.routing.hierarchy import Group, Level, models_outside
from edgeproxy.service.admin import audit
from edgeproxy.service.admin.teams import ATTEMPTS, check_id, found, parent_of
from edgeproxy.state.store import TeamStore

PARAM = "organization_id"


async def move_team(
    store: TeamStore,
    team_id: str,
    org_id: str,
    expected: int | None,
    actor: str,
    now: float,
) -> tuple[Group, Group]:
    """Move team ``team_id`` into organization ``org_id``; (before, after)."""
    check_id(org_id, PARAM)
    for _ in range(ATTEMPTS):
        team = await found(store, Level.TEAM, team_id)
        if expected is not None and team.version != expected:
            raise VersionConflict(
                f"Team `{team_id}` is at version {team.version}, not {expected}: re-read it first.",
                param="version",
            )
        org = await parent_of(store, org_id)
        if team.parent == org.id:
            return team, team
        _fits(team, org)
        changes = [{"path": PARAM, "old": team.parent, "new": org.id}]
        entry = audit.entry(actor, "team.move", f"team:{team_id}", changes, now)
        if await store.move_team(team, org, entry):
            return team, replace(team, parent=org.id, version=team.version + 1)
        if expected is not None:
            break
    raise VersionConflict(
        f"Team `{team_id}` or organization `{org_id}` changed meanwhile; re-read and retry.",
        param="version",
    )


def _fits(team: Group, org: Group) -> None:
    names = models_outside(team.models, org)
    if names == []:
        return
    outside = "every model" if names is None else ", ".join(f"`{m}`" for m in names)
    raise RequestError(
        f"{PARAM}: team `{team.id}`'s models allow {outside}, which organization `{org.id}` "
        f"does not allow (its models: {', '.join(sorted(org.models or ()))}); narrow the team's "
        "models first",
        param=PARAM,
        code="models_not_allowed",
    )
