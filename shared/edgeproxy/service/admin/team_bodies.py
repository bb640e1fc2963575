"""The bodies that describe an organization or a team: the admin API's, the CLI's and the
configuration file's entries, validated the same way."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field

from edgeproxy.config.base import Strict
from edgeproxy.config.deployment import MAX_COUNTER_SHARDS
from edgeproxy.errors import RequestError
from edgeproxy.routing.access import MAX_PARALLEL_REQUESTS, BudgetPeriod
from edgeproxy.routing.hierarchy import MAX_TAGS, EndUserLimits, Group, Level

NonNegative = Annotated[int, Field(ge=0)]
Name = Annotated[str, Field(min_length=1, max_length=128)]
Models = Annotated[
    list[Annotated[str, Field(min_length=1, max_length=256)]], Field(max_length=1000)
]
Tags = Annotated[
    dict[Annotated[str, Field(min_length=1, max_length=64)], Annotated[str, Field(max_length=256)]],
    Field(max_length=MAX_TAGS),
]


class EndUserFields(Strict):
    """A team's ``end_user_limits``: what each end user its requests name may use."""

    rpm_limit: NonNegative | None = None
    tpm_limit: NonNegative | None = None
    max_parallel_requests: Annotated[int, Field(ge=0, le=MAX_PARALLEL_REQUESTS)] | None = None
    budget_usd: Annotated[float, Field(ge=0, allow_inf_nan=False)] | None = None
    budget_period: BudgetPeriod = BudgetPeriod.TOTAL


class GroupFields(Strict):
    """What an organization or team carries."""

    models: Models | None = None
    rpm_limit: NonNegative | None = None
    tpm_limit: NonNegative | None = None
    max_parallel_requests: Annotated[int, Field(ge=0, le=MAX_PARALLEL_REQUESTS)] | None = None
    budget_usd: Annotated[float, Field(ge=0, allow_inf_nan=False)] | None = None
    budget_period: BudgetPeriod | None = None
    # Strictly inside (0, 1), as a key's ``key_soft_budget_ratio``: 0 would alert at the first
    # spend, 1 would repeat the 100% alert.
    soft_budget_ratio: Annotated[float, Field(gt=0, lt=1, allow_inf_nan=False)] | None = None
    tags: Tags | None = None
    end_user_limits: EndUserFields | None = None  # a team's only
    # Items the minute bucket spreads over (a hot level's write rate; null: 1).
    counter_shards: Annotated[int, Field(ge=1, le=MAX_COUNTER_SHARDS)] | None = None


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


class MoveTeam(Strict):
    """The body of ``PUT /admin/teams/{team_id}/organization``."""

    organization_id: Annotated[str, Field(min_length=1, max_length=63)]
    version: int | None = None


class MoveKey(Strict):
    """The body of ``PUT /admin/keys/{key_id}/team``."""

    team_id: Annotated[str, Field(min_length=1, max_length=63)] | None
    version: int | None = None


def group_fields(body: GroupFields, kind: Level | None = None) -> dict[str, Any]:
    """The ``Group`` fields a body sets (``kind``: the level they are for, when known)."""
    given = body.model_fields_set - {"version", "id", "organization_id"}
    fields = {name: getattr(body, name) for name in given}
    if "name" in fields and fields["name"] is None:
        raise RequestError("name: cannot be null", param="name")
    if "models" in fields and fields["models"] is not None:
        fields["models"] = frozenset(fields["models"])
    if "tags" in fields:
        fields["tags"] = dict(fields["tags"] or {})
    if "counter_shards" in fields and fields["counter_shards"] is None:
        fields["counter_shards"] = 1
    if "budget_period" in fields and fields["budget_period"] is None:
        fields["budget_period"] = BudgetPeriod.TOTAL
    per_user = fields.get("end_user_limits")
    if per_user is not None:
        if kind is Level.ORGANIZATION:
            raise RequestError(
                "end_user_limits: only a team has them (an end user is scoped to its team)",
                param="end_user_limits",
            )
        fields["end_user_limits"] = EndUserLimits(
            per_user.rpm_limit,
            per_user.tpm_limit,
            per_user.max_parallel_requests,
            per_user.budget_usd,
            per_user.budget_period,
        )
    return fields


def new_group(kind: Level, body: CreateOrganization) -> Group:
    """The organization or team a creation body describes."""
    fields = group_fields(body, kind)
    return Group(
        kind=kind,
        id=body.id,
        name=body.name,
        parent=body.organization_id if isinstance(body, CreateTeam) else None,
        **{k: v for k, v in fields.items() if k != "name"},
    )
