"""``ConfigStore``: the configuration document, read and conditionally replaced.

The document is one item. Reading it is strongly consistent (what is acted
on has no other condition to check); saving it is a conditional write on its
version, in one transaction with its audit entry. ``DynamoStore`` inherits
these and supplies the table.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from edgeproxy.state import items, keys
from edgeproxy.state.audit import AuditEntry
from edgeproxy.state.dynamodb import conditions as cond
from edgeproxy.state.dynamodb.dynamo_audit import audit_put
from edgeproxy.state.dynamodb.schema import TableSchema
from edgeproxy.state.dynamodb.table import Table
from edgeproxy.state.items import number, text
from edgeproxy.state.store import StoredConfig


class DynamoConfig:
    """``ConfigStore``: ``load_config`` and ``save_config`` (mixed into ``DynamoStore``)."""

    _table: Table
    _schema: TableSchema

    async def load_config(self) -> StoredConfig | None:
        """The stored configuration document, or None if none was saved."""
        response = await self._table.call(
            "get_item", Key=self._table.key(keys.config_key()), ConsistentRead=True
        )
        item = response.get("Item")
        if not item:
            return None
        return StoredConfig(
            document=items.get_text(item, "document") or "", version=items.get_int(item, "version")
        )

    async def save_config(
        self, document: str, expected_version: int, audit: AuditEntry | None = None
    ) -> int | None:
        """Store ``document`` if the stored version is still ``expected_version`` (0: none).

        Returns the new version (``expected_version + 1``), or None when another
        writer changed the document first (nothing written). With ``audit``, the
        entry is written in the same transaction: no change without its entry.
        """
        version = expected_version + 1
        update: dict[str, Any] = {
            "Key": self._table.key(keys.config_key()),
            "UpdateExpression": "SET #document = :document, #version = :version",
            "ExpressionAttributeNames": {"#document": "document", "#version": "version"},
            "ExpressionAttributeValues": {":document": text(document), ":version": number(version)},
        }
        # Two admins editing from the same version must not both commit: check and write are one.
        if expected_version == 0:
            update["ConditionExpression"] = cond.CONFIG_ABSENT
        else:
            update["ConditionExpression"] = cond.CONFIG_UNCHANGED
            update["ExpressionAttributeValues"][":expected"] = number(expected_version)
        writes: list[tuple[str, dict[str, Any]]] = [("Update", update)]
        if audit is not None:
            writes.append(
                (
                    "Put",
                    audit_put(
                        self._table, self._schema, dataclasses.replace(audit, version=version)
                    ),
                )
            )
        return version if await self._table.transact_if(writes) else None
