"""Organizations and teams above client keys, and the rules between the levels (pure).

A key belongs to at most one team (``ClientKey.team_id``); a team to exactly
one organization (``Group.parent``). Two levels, fixed: an organization has
no parent and a team's parent must be an organization, so a cycle cannot be
written (``state/teams.py`` keeps them in different partitions).

    >>> effective(key, team, org)         # each limit, the strictest, with its level
    >>> models_outside(key.models, team)  # what a move into ``team`` would break
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum

from edgeproxy.routing.access import BudgetPeriod, ClientKey

# Ids are chosen by admins and appear in table keys, URLs and audit entries: plain slugs only.
GROUP_ID = re.compile(r"[a-z0-9][a-z0-9_-]{0,62}")
MAX_TAGS = 32


class Level(StrEnum):
    KEY = "key"
    TEAM = "team"
    ORGANIZATION = "organization"
    END_USER = "end_user"  # the end user a request names, scoped to its key's team


@dataclass(frozen=True, slots=True)
class EndUserLimits:
    """What each end user of a team may use (``Group.end_user_limits``): every end user
    the team's requests name is held to these, each on its own counters."""

    rpm_limit: int | None = None
    tpm_limit: int | None = None
    max_parallel_requests: int | None = None
    budget_usd: float | None = None
    budget_period: BudgetPeriod = BudgetPeriod.TOTAL


@dataclass(frozen=True, slots=True)
class Group:
    """An organization or a team as stored.

    ``parent``: a team's organization (None for an organization). Limits as a
    key's (``ClientKey``); ``soft_budget_ratio``: the share of ``budget_usd``
    at which an alert is due. ``members``: keys (team) or teams (organization)
    it owns, kept in the same transactions that add and remove them, so a
    delete can be refused atomically; ``members_rev`` counts those changes.
    """

    kind: Level
    id: str
    name: str
    parent: str | None = None
    models: frozenset[str] | None = None
    rpm_limit: int | None = None
    tpm_limit: int | None = None
    max_parallel_requests: int | None = None
    budget_usd: float | None = None
    budget_period: BudgetPeriod = BudgetPeriod.TOTAL
    soft_budget_ratio: float | None = None
    tags: Mapping[str, str] = field(default_factory=dict)
    end_user_limits: EndUserLimits | None = None  # a team's, per end user
    counter_shards: int = 1  # items its minute bucket spreads over (``routing.allowance``)
    created_at: float = 0.0
    version: int = 0
    members: int = 0
    members_rev: int = 0


# The limits every level may carry, as ``ClientKey`` and ``Group`` name them.
LIMITS = ("rpm_limit", "tpm_limit", "max_parallel_requests", "budget_usd")


@dataclass(frozen=True, slots=True)
class Effective:
    """One effective limit: the strictest value over the levels, and the level it came from
    (None and None: no level sets it)."""

    value: float | None
    level: Level | None


def _levels(
    key: ClientKey, team: Group | None, org: Group | None
) -> list[tuple[Level, ClientKey | Group]]:
    found: list[tuple[Level, ClientKey | Group]] = [(Level.KEY, key)]
    if team is not None:
        found.append((Level.TEAM, team))
    if org is not None:
        found.append((Level.ORGANIZATION, org))
    return found


def strictest(key: ClientKey, team: Group | None, org: Group | None, name: str) -> Effective:
    """The lowest ``name`` set on the key, its team or its organization (a tie: the lowest
    level, the key's first)."""
    best = Effective(None, None)
    for level, holder in _levels(key, team, org):
        value = getattr(holder, name)
        if value is not None and (best.value is None or value < best.value):
            best = Effective(value, level)
    return best


def effective_models(
    key: ClientKey, team: Group | None, org: Group | None
) -> tuple[frozenset[str] | None, list[Level]]:
    """The models every level allows (None: any) and the levels that narrow them."""
    allowed: frozenset[str] | None = None
    narrowing: list[Level] = []
    for level, holder in _levels(key, team, org):
        if holder.models is not None:
            allowed = holder.models if allowed is None else allowed & holder.models
            narrowing.append(level)
    return allowed, narrowing


def effective(key: ClientKey, team: Group | None, org: Group | None) -> dict[str, Effective]:
    """Every limit of ``LIMITS`` as it applies to ``key`` under ``team`` and ``org``."""
    return {name: strictest(key, team, org, name) for name in LIMITS}


def models_outside(models: frozenset[str] | None, group: Group) -> list[str] | None:
    """What of ``models`` (a key's or a team's list) ``group`` does not allow, sorted; None
    when ``models`` is every model but ``group`` has a list. Empty: it fits."""
    if group.models is None:
        return []
    if models is None:
        return None
    return sorted(
        m for m in models if m not in group.models and m.split(":", 1)[0] not in group.models
    )


GATEWAY = "gateway"


@dataclass(frozen=True, slots=True)
class AdminScope:
    """Admin rights below the gateway admin's: over one team or organization, or read-only.

    ``level`` None with ``read_only``: a gateway-wide viewer. A team admin
    manages its team and the team's keys; an organization admin its
    organization's teams and their keys; ``read_only`` allows reads only.
    """

    level: Level | None
    id: str | None
    read_only: bool = False

    def covers(self, team_id: str | None, org_id: str | None) -> bool:
        """Whether an object of team ``team_id`` in organization ``org_id`` is in scope."""
        if self.level is None:
            return True
        if self.level is Level.TEAM:
            return team_id is not None and team_id == self.id
        return org_id is not None and org_id == self.id

    @property
    def text(self) -> str:
        """As ``ClientKey.admin_of`` stores it."""
        return GATEWAY if self.level is None else f"{self.level.value}:{self.id}"


def scope_of(key: ClientKey) -> AdminScope | None:
    """The scoped admin rights ``key`` carries (None: none, or a malformed value)."""
    if key.admin_of is None:
        return None
    if key.admin_of == GATEWAY:
        return AdminScope(None, None, read_only=True) if key.admin_read_only else None
    level, _, group_id = key.admin_of.partition(":")
    if level not in (Level.TEAM.value, Level.ORGANIZATION.value) or not GROUP_ID.fullmatch(
        group_id
    ):
        return None
    return AdminScope(Level(level), group_id, key.admin_read_only)


def more_rights(minter: ClientKey, minted: ClientKey) -> str | None:
    """The first field in which ``minted`` would have more rights than ``minter`` (a scoped
    admin's own key), or None. Roles are ordered; models must be within the minter's list;
    each limit the minter has, the minted key must have too, no higher; and admin rights
    no wider (a viewer mints no admins)."""
    if not minter.role.at_least(minted.role):
        return "role"
    if minter.models is not None and (minted.models is None or not minted.models <= minter.models):
        return "models"
    for name in LIMITS:
        mine, theirs = getattr(minter, name), getattr(minted, name)
        if mine is not None and (theirs is None or theirs > mine):
            return name
    if minted.admin_of is not None and (
        minted.admin_of != minter.admin_of
        or (minter.admin_read_only and not minted.admin_read_only)
    ):
        return "admin_of"
    return None
