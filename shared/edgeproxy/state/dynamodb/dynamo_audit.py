"""The admin plane's audited writes: audit entries, operator circuit changes.

An operator's circuit change (force-open for maintenance, manual close) is
a conditional write on the circuit's version, like every transition the
router makes, in one transaction with its audit entry. ``DynamoStore``
inherits these and supplies the table.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from edgeproxy.routing.snapshot import Circuit
from edgeproxy.state import items, keys
from edgeproxy.state.audit import AuditEntry, audit_from, audit_item
from edgeproxy.state.dynamodb import conditions as cond
from edgeproxy.state.dynamodb.schema import TableSchema
from edgeproxy.state.dynamodb.table import Table
from edgeproxy.state.items import number, text


def audit_put(table: Table, schema: TableSchema, entry: AuditEntry) -> dict[str, Any]:
    """The conditional put of one audit entry, alone or in another write's transaction."""
    # A random id in the sort key: two entries of one millisecond never collide.
    return {
        "Item": {**table.key(keys.audit_key(entry.at, entry.id)), **audit_item(entry)},
        "ConditionExpression": cond.AUDIT_ABSENT,
        "ExpressionAttributeNames": {"#pk": schema.pk},
    }


class DynamoAudit:
    """``AuditLog``: audit entries and audited circuit writes (mixed into ``DynamoStore``)."""

    _table: Table
    _schema: TableSchema

    async def record_audit(self, entry: AuditEntry) -> None:
        """Store one audit entry (for changes that are not a single conditional write)."""
        await self._table.call("put_item", **audit_put(self._table, self._schema, entry))

    async def read_audit(
        self, limit: int, before: str | None = None
    ) -> tuple[list[AuditEntry], str | None]:
        """Up to ``limit`` entries, newest first, older than cursor ``before``; and the next cursor."""
        names = {"#pk": self._schema.pk}
        values: dict[str, Any] = {":pk": text(keys.AUDIT_PK)}
        condition = "#pk = :pk"
        if before is not None:
            names["#sk"] = self._schema.sk
            values[":before"] = text(before)
            condition += " AND #sk < :before"
        response = await self._table.call(
            "query",
            KeyConditionExpression=condition,
            ExpressionAttributeNames=names,
            ExpressionAttributeValues=values,
            ScanIndexForward=False,
            Limit=limit,
            ConsistentRead=True,
        )
        found = response.get("Items", [])
        entries = [audit_from(item) for item in found]
        more = "LastEvaluatedKey" in response and len(found) == limit
        return entries, (found[-1][self._schema.sk]["S"] if more and found else None)

    async def read_circuit(self, deployment_id: str) -> Circuit:
        """One deployment's circuit as stored (the never-written circuit if absent)."""
        response = await self._table.call(
            "get_item", Key=self._table.key(keys.circuit_key(deployment_id)), ConsistentRead=True
        )
        return items.circuit_from(deployment_id, response.get("Item") or {})

    async def write_circuit_audited(
        self, new: Circuit, expected_version: int, audit: AuditEntry
    ) -> bool:
        """Store an operator's circuit change if its version is still ``expected_version``.

        False (nothing written) when the circuit changed meanwhile. The audit
        entry records the new circuit version.
        """
        if new.version != expected_version + 1:
            raise ValueError(f"circuit version must be {expected_version + 1}, got {new.version}")
        put: dict[str, Any] = {
            "Item": {
                **self._table.key(keys.circuit_key(new.deployment_id)),
                **items.circuit_item(new),
            }
        }
        if expected_version == 0:
            put["ConditionExpression"] = cond.CIRCUIT_ABSENT
            put["ExpressionAttributeNames"] = {"#pk": self._schema.pk}
        else:
            put["ConditionExpression"] = cond.CIRCUIT_UNCHANGED
            put["ExpressionAttributeNames"] = {"#version": "version"}
            put["ExpressionAttributeValues"] = {":expected": number(expected_version)}
        entry = dataclasses.replace(audit, version=new.version)
        return await self._table.transact_if(
            [("Put", put), ("Put", audit_put(self._table, self._schema, entry))]
        )
