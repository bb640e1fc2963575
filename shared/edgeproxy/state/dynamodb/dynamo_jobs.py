"""The DynamoDB calls of the scheduled jobs: usage history in, health and quota out.

Usage history (the health job, the binding-share report, the router after a
failure), health scores, and each credential's quota readings and failed
refreshes. ``DynamoStore`` inherits them and supplies the table.
"""

from __future__ import annotations

import asyncio
from typing import Any

from edgeproxy.routing.snapshot import Health, Quota, Usage
from edgeproxy.state import items, keys
from edgeproxy.state.counter_shards import summed
from edgeproxy.state.dynamodb.schema import TableSchema
from edgeproxy.state.dynamodb.table import Table
from edgeproxy.state.items import Item, number, text

# Two health-job runs must not let an earlier minute overwrite a later one, nor run one minute twice.
OLDER_MINUTE = "attribute_not_exists(#minute) OR #minute < :minute"


# A slow refresh must not overwrite a newer reading of the same unit (headers race the job).
NEWER_READING = "attribute_not_exists(#fetched) OR #fetched < :fetched"


class DynamoJobs:
    """``JobStore``'s own calls (health, quota failures and readings), ``QuotaSink`` and
    ``UsageSource`` (usage history), mixed into ``DynamoStore``."""

    _table: Table
    _schema: TableSchema

    async def read_usage(
        self, deployment_id: str, first_minute: int, last_minute: int, shards: int = 1
    ) -> list[Usage]:
        """Usage buckets of one deployment in ``[first_minute, last_minute]``, oldest first.

        A sharded deployment's buckets are one Query per shard (in parallel), summed per minute.
        """
        found = await asyncio.gather(
            *(
                self._query_usage(keys.usage_shard_pk(deployment_id, s), first_minute, last_minute)
                for s in range(max(1, shards))
            )
        )
        by_minute: dict[int, list[Item]] = {}
        for item in (i for part in found for i in part):
            by_minute.setdefault(keys.minute_of(item[self._schema.sk]["S"]), []).append(item)
        return [
            items.usage_from(deployment_id, minute, summed(parts, self._schema.ttl) or {})
            for minute, parts in sorted(by_minute.items())
        ]

    async def _query_usage(self, pk: str, first_minute: int, last_minute: int) -> list[Item]:
        """Every usage item of one partition in ``[first_minute, last_minute]``."""
        query: dict[str, Any] = {
            "KeyConditionExpression": "#pk = :pk AND #sk BETWEEN :first AND :last",
            "ExpressionAttributeNames": {"#pk": self._schema.pk, "#sk": self._schema.sk},
            "ExpressionAttributeValues": {
                ":pk": text(pk),
                ":first": text(keys.usage_sk(first_minute)),
                ":last": text(keys.usage_sk(last_minute)),
            },
            "ConsistentRead": True,
        }
        found: list[Item] = []
        while True:
            response = await self._table.call("query", **query)
            found.extend(response.get("Items", []))
            if "LastEvaluatedKey" not in response:
                return found
            query["ExclusiveStartKey"] = response["LastEvaluatedKey"]

    async def put_health(self, health: Health, expires_at: float) -> bool:
        """Store the health job's result for one deployment, unless a run for a later minute did.

        An update, so the rejection counter the outcome writes keep is left as it
        is. Returns False when the stored item is of the same or a later minute
        (two overlapping runs: the first one wins, the second changes nothing).
        """
        attrs = {**items.health_item(health), self._schema.ttl: number(expires_at)}
        names = {f"#a{i}": name for i, name in enumerate(attrs)}
        values = {f":a{i}": value for i, value in enumerate(attrs.values())}
        expression = "SET " + ", ".join(f"#a{i} = :a{i}" for i in range(len(attrs)))
        gone = [n for n in ("ewma_latency_ms", "ewma_tokens_per_s") if n not in attrs]
        if gone:
            names.update({f"#r{i}": name for i, name in enumerate(gone)})
            expression += " REMOVE " + ", ".join(f"#r{i}" for i in range(len(gone)))
        won, _ = await self._table.write_if(
            "update_item",
            Key=self._table.key(keys.health_key(health.deployment_id)),
            UpdateExpression=expression,
            ConditionExpression=OLDER_MINUTE,
            ExpressionAttributeNames={**names, "#minute": "minute"},
            ExpressionAttributeValues={**values, ":minute": number(health.minute)},
        )
        return won

    async def put_quota(self, quota: Quota) -> bool:
        """Store one unit's reading of a credential's quota; False if a newer one is stored."""
        attributes = items.quota_attributes(quota)
        names = {f"#a{i}": name for i, name in enumerate(attributes)}
        values = {f":a{i}": value for i, value in enumerate(attributes.values())}
        sets = ", ".join(f"#a{i} = :a{i}" for i in range(len(attributes)))
        won, _ = await self._table.write_if(
            "update_item",
            Key=self._table.key(keys.quota_key(quota.credential)),
            UpdateExpression=f"SET {sets}",
            ConditionExpression=NEWER_READING,
            ExpressionAttributeNames={**names, "#fetched": f"{quota.unit}_fetched_at"},
            ExpressionAttributeValues={**values, ":fetched": number(quota.fetched_at)},
        )
        return won

    async def note_quota_failure(self, credential: str, error: str, at: float) -> None:
        """Record a failed refresh beside the last good readings (which stay as they are)."""
        await self._table.call(
            "update_item",
            Key=self._table.key(keys.quota_key(credential)),
            UpdateExpression="SET #error = :error, #at = :at",
            ExpressionAttributeNames={"#error": "error", "#at": "error_at"},
            ExpressionAttributeValues={":error": text(error[:500]), ":at": number(at)},
        )
