"""Organization and team items: ``Group`` to and from DynamoDB typed attribute maps.

Layout (keys built in ``state/keys.py``): every organization in partition
``orgs``, every team in ``teams``, sort key the id. Listing a level is one
Query; a lookup one GetItem. Both are written only by admins.

==================  ========  ==========  ==============================================
item                pk        sk          attributes
==================  ========  ==========  ==============================================
organization        ``orgs``  ``<id>``    name, models, rpm_limit, tpm_limit,
                                          max_parallel_requests, budget_usd,
                                          budget_period, soft_budget_ratio, tags (M),
                                          counter_shards (absent: 1),
                                          created_at, version, members (its teams),
                                          members_rev (no TTL)
team                ``teams`` ``<id>``    the same, plus organization_id; members: its
                                          keys (no TTL)
==================  ========  ==========  ==============================================

``members`` changes only by ``ADD`` in the transaction that creates, moves or
deletes a member, so "no members" is a condition a delete can carry.
``members_rev`` is ``ADD 1`` in each of those: a team update that checked its
keys' models carries ``members_rev = <read>``, so a key moved in meanwhile
makes it fail instead of slipping past the check.
"""

from __future__ import annotations

from edgeproxy.routing.access import BudgetPeriod
from edgeproxy.routing.hierarchy import EndUserLimits, Group, Level
from edgeproxy.state import keys
from edgeproxy.state.items import (
    AttributeValue,
    Item,
    get_float,
    get_int,
    get_optional_float,
    get_text,
    number,
    text,
)

# Attributes an update may remove (set to null), as the item names them.
REMOVABLE = (
    "models",
    "rpm_limit",
    "tpm_limit",
    "max_parallel_requests",
    "budget_usd",
    "budget_period",
    "soft_budget_ratio",
    "tags",
    "end_user_limits",
    "counter_shards",
)
END_USER_NUMBERS = ("rpm_limit", "tpm_limit", "max_parallel_requests", "budget_usd")


def group_key(kind: Level, group_id: str) -> keys.Key:
    """The table key of an organization or a team."""
    if kind is Level.ORGANIZATION:
        return keys.organization_key(group_id)
    if kind is Level.TEAM:
        return keys.team_key(group_id)
    raise ValueError(f"no items of level {kind}")


def group_item(group: Group) -> Item:
    """The settings of ``group`` (not its counters or version, which writes own)."""
    item: Item = {"name": text(group.name), "created_at": number(group.created_at)}
    if group.parent is not None:
        item["organization_id"] = text(group.parent)
    if group.models is not None:
        item["models"] = {"L": [text(m) for m in sorted(group.models)]}
    if group.budget_period is not BudgetPeriod.TOTAL:
        item["budget_period"] = text(group.budget_period.value)
    if group.tags:
        item["tags"] = {"M": {k: text(v) for k, v in sorted(group.tags.items())}}
    numbers = {
        "rpm_limit": group.rpm_limit,
        "tpm_limit": group.tpm_limit,
        "max_parallel_requests": group.max_parallel_requests,
        "budget_usd": group.budget_usd,
        "soft_budget_ratio": group.soft_budget_ratio,
    }
    item.update({n: number(v) for n, v in numbers.items() if v is not None})
    if group.counter_shards > 1:
        item["counter_shards"] = number(group.counter_shards)
    per_user = group.end_user_limits
    if per_user is not None:
        limits: Item = {
            n: number(getattr(per_user, n))
            for n in END_USER_NUMBERS
            if getattr(per_user, n) is not None
        }
        limits["budget_period"] = text(per_user.budget_period.value)
        item["end_user_limits"] = {"M": limits}
    return item


def _end_user_limits(value: AttributeValue | None) -> EndUserLimits | None:
    if value is None:
        return None
    limits: Item = value.get("M", {})
    return EndUserLimits(
        rpm_limit=_optional_int(limits, "rpm_limit"),
        tpm_limit=_optional_int(limits, "tpm_limit"),
        max_parallel_requests=_optional_int(limits, "max_parallel_requests"),
        budget_usd=get_optional_float(limits, "budget_usd"),
        budget_period=BudgetPeriod(get_text(limits, "budget_period") or BudgetPeriod.TOTAL.value),
    )


def _models(value: AttributeValue | None) -> frozenset[str] | None:
    return None if value is None else frozenset(str(v["S"]) for v in value.get("L", []))


def _optional_int(item: Item, name: str) -> int | None:
    return get_int(item, name) if name in item else None


def group_from(kind: Level, group_id: str, item: Item) -> Group:
    """An organization or team from its stored item."""
    tags = item.get("tags", {}).get("M", {})
    return Group(
        kind=kind,
        id=group_id,
        name=get_text(item, "name") or "",
        parent=get_text(item, "organization_id"),
        models=_models(item.get("models")),
        rpm_limit=_optional_int(item, "rpm_limit"),
        tpm_limit=_optional_int(item, "tpm_limit"),
        max_parallel_requests=_optional_int(item, "max_parallel_requests"),
        budget_usd=get_optional_float(item, "budget_usd"),
        budget_period=BudgetPeriod(get_text(item, "budget_period") or BudgetPeriod.TOTAL.value),
        soft_budget_ratio=get_optional_float(item, "soft_budget_ratio"),
        tags={k: str(v["S"]) for k, v in tags.items()},
        end_user_limits=_end_user_limits(item.get("end_user_limits")),
        counter_shards=max(1, get_int(item, "counter_shards") or 1),
        created_at=get_float(item, "created_at"),
        version=get_int(item, "version"),
        members=get_int(item, "members"),
        members_rev=get_int(item, "members_rev"),
    )
