"""Client-key items: ``ClientKey`` to and from DynamoDB typed attribute maps."""

from __future__ import annotations

from edgeproxy.config.roles import Role
from edgeproxy.routing.access import BudgetPeriod, ClientKey, KeyUsage
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


def client_key_item(key: ClientKey) -> Item:
    """The attributes of a client key item (optional fields left out when unset)."""
    item: Item = {
        "name": text(key.name),
        "role": text(key.role.value),
        "prefix": text(key.prefix),
        "revoked": {"BOOL": key.revoked},
        "created_at": number(key.created_at),
        "last_used_at": number(key.last_used_at),
    }
    if key.models is not None:
        item["models"] = {"L": [text(m) for m in sorted(key.models)]}
    if key.budget_period is not BudgetPeriod.TOTAL:
        item["budget_period"] = text(key.budget_period.value)
    if key.secret_digest is not None:
        item["secret_digest"] = text(key.secret_digest)
    if key.team_id is not None:
        item["team_id"] = text(key.team_id)
    if key.admin_of is not None:
        item["admin_of"] = text(key.admin_of)
    if key.admin_read_only:
        item["admin_read_only"] = {"BOOL": True}
    item.update({name: number(v) for name, v in optional_numbers(key).items() if v is not None})
    return item


def optional_numbers(key: ClientKey) -> dict[str, float | None]:
    """The key's numeric attributes that may be absent (None: not stored)."""
    return {
        "rpm_limit": key.rpm_limit,
        "tpm_limit": key.tpm_limit,
        "max_parallel_requests": key.max_parallel_requests,
        "budget_usd": key.budget_usd,
        "key_expires_at": key.expires_at,
        "version": key.version or None,
        "rotated_at": key.rotated_at,
        "grace_until": key.grace_until,
        "retired_until": key.secret_expires_at,
    }


def _optional_int(item: Item, name: str) -> int | None:
    return get_int(item, name) if name in item else None


def _models(value: AttributeValue | None) -> frozenset[str] | None:
    if value is None:
        return None
    return frozenset(str(v["S"]) for v in value.get("L", []))


def client_key_from(digest: str, item: Item) -> ClientKey:
    """A client key from its stored item (``digest`` is its sort key)."""
    return ClientKey(
        digest=digest,
        name=get_text(item, "name") or "",
        role=Role(get_text(item, "role") or Role.FREE.value),
        prefix=get_text(item, "prefix") or "",
        models=_models(item.get("models")),
        rpm_limit=_optional_int(item, "rpm_limit"),
        tpm_limit=_optional_int(item, "tpm_limit"),
        budget_usd=get_optional_float(item, "budget_usd"),
        expires_at=get_optional_float(item, "key_expires_at"),
        revoked=bool(item.get("revoked", {}).get("BOOL", False)),
        created_at=get_float(item, "created_at"),
        last_used_at=get_float(item, "last_used_at"),
        budget_period=BudgetPeriod(get_text(item, "budget_period") or BudgetPeriod.TOTAL.value),
        version=get_int(item, "version"),
        secret_digest=get_text(item, "secret_digest"),
        rotated_at=get_optional_float(item, "rotated_at"),
        grace_until=get_optional_float(item, "grace_until"),
        secret_expires_at=get_optional_float(item, "retired_until"),
        max_parallel_requests=_optional_int(item, "max_parallel_requests"),
        team_id=get_text(item, "team_id"),
        admin_of=get_text(item, "admin_of"),
        admin_read_only=bool(item.get("admin_read_only", {}).get("BOOL", False)),
    )


def key_usage_from(minute: int, bucket: Item, spend: Item) -> KeyUsage:
    """A key's counters from its minute bucket and its spend item (absent: zero)."""
    return KeyUsage(
        minute=minute, tokens=get_int(bucket, "tokens"), spend_usd=get_float(spend, "spend_usd")
    )
