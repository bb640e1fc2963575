"""The DynamoDB writes of a client key's lifecycle: update and rotation (layout: ``state/keys.py``).

Both are conditional on the key item's ``version`` as the admin read it, so
two admins changing one key never lose a change silently: the second write
fails and is retried on a fresh read (or answered 409 when the caller named
the version it expected). A rotation is one transaction: the new secret's
item (only if its digest is new), the key item's new version, and the
previous secret's ``retired_until``.
"""

from __future__ import annotations

from typing import Any

from edgeproxy.routing.access import ClientKey
from edgeproxy.state import keys
from edgeproxy.state.dynamodb.conditions import (
    KEY_FIRST_VERSION,
    KEY_UNCHANGED,
    RETIRED_ITEM_EXISTS,
    ROTATION_ITEM_ABSENT,
)
from edgeproxy.state.dynamodb.schema import TableSchema
from edgeproxy.state.dynamodb.table import Table
from edgeproxy.state.items import Item, number, text
from edgeproxy.state.key_items import client_key_item

# Attributes the lifecycle writes never touch (the last-used touch and creation own them).
_KEPT = {"created_at", "last_used_at"}
_REMOVABLE = (
    "models",
    "rpm_limit",
    "tpm_limit",
    "max_parallel_requests",
    "budget_usd",
    "budget_period",
    "key_expires_at",
    "secret_digest",
    "rotated_at",
    "grace_until",
    "retired_until",
    "team_id",
    "admin_of",
    "admin_read_only",
)


def versioned_update(
    table: Table, schema: TableSchema, key: ClientKey, expected_version: int
) -> dict[str, Any]:
    """The conditional UpdateItem that stores ``key`` over version ``expected_version``."""
    item: Item = {
        n: v for n, v in client_key_item(key).items() if n not in _KEPT and n != "version"
    }
    names = {f"#a{i}": n for i, n in enumerate(item)}
    values = {f":a{i}": v for i, v in enumerate(item.values())}
    update = "SET " + ", ".join(f"#a{i} = :a{i}" for i in range(len(item)))
    update += ", #version = :next"
    removed = [n for n in _REMOVABLE if n not in item]
    if removed:
        names.update({f"#r{i}": n for i, n in enumerate(removed)})
        update += " REMOVE " + ", ".join(f"#r{i}" for i in range(len(removed)))
    names["#version"] = "version"
    values[":next"] = number(expected_version + 1)
    if expected_version == 0:
        names["#pk"] = schema.pk
        condition = KEY_FIRST_VERSION
    else:
        condition = KEY_UNCHANGED
        values[":expected"] = number(expected_version)
    return {
        "Key": table.key(keys.client_key_key(key.digest)),
        "UpdateExpression": update,
        "ConditionExpression": condition,
        "ExpressionAttributeNames": names,
        "ExpressionAttributeValues": values,
    }


class DynamoKeyLifecycle:
    """The lifecycle writes of ``DynamoStore``."""

    _table: Table
    _schema: TableSchema

    def _versioned(self, key: ClientKey, expected_version: int) -> dict[str, Any]:
        return versioned_update(self._table, self._schema, key, expected_version)

    async def update_client_key(self, key: ClientKey, expected_version: int) -> bool:
        """Store ``key``'s settings if its item is still at ``expected_version`` (then +1)."""
        won, _ = await self._table.write_if("update_item", **self._versioned(key, expected_version))
        return won

    async def rotate_client_key(
        self, key: ClientKey, expected_version: int, previous: str | None, retired_until: float
    ) -> bool:
        """One transaction: the secret item of ``key.secret_digest`` (the new secret), ``key``
        over ``expected_version``, and the secret item ``previous`` retired at ``retired_until``.

        ``previous`` None: the key item's own first secret was current; ``key`` carries its
        retirement (``secret_expires_at``). False (nothing written) on a stale version.
        """
        assert key.secret_digest is not None
        pk = self._schema.pk
        secret: Item = {
            **self._table.key(keys.client_key_key(key.secret_digest)),
            "key_of": text(key.digest),
            "prefix": text(key.prefix),
            "created_at": number(key.rotated_at or 0.0),
        }
        absent = {"ConditionExpression": ROTATION_ITEM_ABSENT}
        writes: list[tuple[str, dict[str, Any]]] = [
            ("Put", {"Item": secret, **absent, "ExpressionAttributeNames": {"#pk": pk}}),
            ("Update", self._versioned(key, expected_version)),
        ]
        if previous is not None:
            retire = {
                "Key": self._table.key(keys.client_key_key(previous)),
                "UpdateExpression": "SET #until = :until",
                "ConditionExpression": RETIRED_ITEM_EXISTS,
                "ExpressionAttributeNames": {"#until": "retired_until", "#pk": pk},
                "ExpressionAttributeValues": {":until": number(retired_until)},
            }
            writes.append(("Update", retire))
        return await self._table.transact_if(writes)
