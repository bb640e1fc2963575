"""The DynamoDB calls for client keys (the request path's and the admin plane's).

Layout: ``state/keys.py``. Creation is conditional on the digest being new;
admission is the same conditional ``ADD`` a deployment's rpm limit uses, on
the key's own minute bucket; usage and spend are commutative ``ADD``s.
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any

from edgeproxy.routing.access import ClientKey, KeyUsage
from edgeproxy.state import keys
from edgeproxy.state.dynamodb.schema import TableSchema
from edgeproxy.state.dynamodb.table import Table
from edgeproxy.state.items import Item, get_optional_float, number, text
from edgeproxy.state.key_items import client_key_from, client_key_item, key_usage_from

KEY_ID = re.compile(r"[0-9a-f]{16}")
# Two requests admitted at once must not push a key's minute past its limit.
KEY_UNDER_LIMIT = "attribute_not_exists(#requests) OR #requests < :limit"
# Creating a key must never overwrite another key with the same digest.
KEY_ABSENT = "attribute_not_exists(#pk)"
# Revoking must not resurrect a key deleted meanwhile as an empty item.
KEY_EXISTS = "attribute_exists(#pk)"


class DynamoKeys:
    """``KeyStore``'s own calls (look a key up, admit it, touch it) and ``KeyRegistry``'s
    (the operators': create, list, find, a key's usage), mixed into ``DynamoStore``."""

    _table: Table
    _schema: TableSchema

    async def _key_item(self, digest: str) -> Item | None:
        response = await self._table.call(
            "get_item", Key=self._table.key(keys.client_key_key(digest)), ConsistentRead=True
        )
        item: Item | None = response.get("Item")
        return item

    async def get_client_key(self, digest: str) -> ClientKey | None:
        """The key whose secret has this digest (one strongly consistent GetItem; two for a
        rotated secret), or None; ``secret_expires_at`` is that secret's own."""
        item = await self._key_item(digest)
        if not item or "key_of" not in item:
            return client_key_from(digest, item) if item else None
        owner = item["key_of"]["S"]
        found = await self._key_item(owner)
        if not found:
            return None
        key = client_key_from(owner, found)
        retired = get_optional_float(item, "retired_until")
        if key.secret_digest != digest and retired is None:
            return None  # neither the current secret nor a retired one
        return replace(key, secret_expires_at=retired)

    async def admit_key(self, key_id: str, minute: int, rpm_limit: int, expires_at: float) -> bool:
        """Count one request in the key's bucket ``minute`` while it is under ``rpm_limit``."""
        if rpm_limit <= 0:
            return False
        won, _ = await self._table.write_if(
            "update_item",
            Key=self._table.key(keys.key_usage_key(key_id, minute)),
            UpdateExpression="ADD #requests :one SET #ttl = :ttl",
            ConditionExpression=KEY_UNDER_LIMIT,
            ExpressionAttributeNames={"#requests": "requests", "#ttl": self._schema.ttl},
            ExpressionAttributeValues={
                ":one": number(1),
                ":limit": number(rpm_limit),
                ":ttl": number(expires_at),
            },
        )
        return won

    async def touch_client_key(self, digest: str, now: float) -> None:
        """Set the key's last-used time (only if the key still exists)."""
        await self._table.write_if(
            "update_item",
            Key=self._table.key(keys.client_key_key(digest)),
            UpdateExpression="SET #used = :now",
            ConditionExpression=KEY_EXISTS,
            ExpressionAttributeNames={"#used": "last_used_at", "#pk": self._schema.pk},
            ExpressionAttributeValues={":now": number(now)},
        )

    # -- admin -----------------------------------------------------------------

    async def put_client_key(self, key: ClientKey) -> bool:
        """Create ``key``; False if a key with the same digest already exists."""
        won, _ = await self._table.write_if(
            "put_item",
            Item={**self._table.key(keys.client_key_key(key.digest)), **client_key_item(key)},
            ConditionExpression=KEY_ABSENT,
            ExpressionAttributeNames={"#pk": self._schema.pk},
        )
        return won

    async def _query_keys(self, id_prefix: str = "") -> list[ClientKey]:
        condition = "#pk = :pk"
        values: dict[str, Any] = {":pk": text(keys.KEYS_PK)}
        if id_prefix:
            condition += " AND begins_with(#sk, :prefix)"
            values[":prefix"] = text(id_prefix)
        query: dict[str, Any] = {
            "KeyConditionExpression": condition,
            "ExpressionAttributeNames": {"#pk": self._schema.pk, "#sk": self._schema.sk}
            if id_prefix
            else {"#pk": self._schema.pk},
            "ExpressionAttributeValues": values,
            "ConsistentRead": True,
        }
        found: list[ClientKey] = []
        while True:
            response = await self._table.call("query", **query)
            for item in response.get("Items", []):
                if "key_of" in item:
                    continue  # a rotated key's secret, not a key
                found.append(client_key_from(item[self._schema.sk]["S"], item))
            if "LastEvaluatedKey" not in response:
                return found
            query["ExclusiveStartKey"] = response["LastEvaluatedKey"]

    async def list_client_keys(self) -> list[ClientKey]:
        """Every client key (one paginated Query), oldest first."""
        return sorted(await self._query_keys(), key=lambda k: (k.created_at, k.digest))

    async def find_client_key(self, key_id: str) -> ClientKey | None:
        """The key whose public id is ``key_id`` (ids are 16 hex characters), or None."""
        if not KEY_ID.fullmatch(key_id):
            return None  # not an id: no query (and never a prefix match on the empty string)
        found = [k for k in await self._query_keys(key_id) if k.id == key_id]
        return found[0] if found else None

    async def read_key_usage(self, key_id: str, minute: int) -> KeyUsage:
        """The key's tokens in bucket ``minute`` and its total spend (one BatchGetItem)."""
        bucket, spend = keys.key_usage_key(key_id, minute), keys.key_spend_key(key_id)
        found: dict[keys.Key, Item] = await self._table.batch_get([bucket, spend])
        return key_usage_from(minute, found.get(bucket, {}), found.get(spend, {}))
