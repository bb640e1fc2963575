"""The DynamoDB calls of the scheduled jobs and the admin plane.

Usage history (the health job, the binding-share report), health scores
and the credential-rejection counter next to them, pool generations
(invalidate every binding of a pool at once) and the configuration document
(a conditional write on its version, with its audit entry). None of these is on the request path, so they live
apart from it; ``DynamoStore`` inherits them and supplies the table.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Sequence
from typing import Any

from edgeproxy.routing.snapshot import Health, Quota, QuotaStatus, Usage
from edgeproxy.state import items, keys
from edgeproxy.state.audit import AuditEntry
from edgeproxy.state.counter_shards import summed
from edgeproxy.state.dynamodb import conditions as cond
from edgeproxy.state.dynamodb.dynamo_audit import DynamoAudit
from edgeproxy.state.dynamodb.schema import TableSchema
from edgeproxy.state.dynamodb.table import Table
from edgeproxy.state.items import Item, number, text

# Two health-job runs must not let an earlier minute overwrite a later one, nor run one minute twice.
OLDER_MINUTE = "attribute_not_exists(#minute) OR #minute < :minute"


# A slow refresh must not overwrite a newer reading of the same unit (headers race the job).
NEWER_READING = "attribute_not_exists(#fetched) OR #fetched < :fetched"


class DynamoAdmin(DynamoAudit):
    """The jobs' and operators' part of ``DynamoStore`` (``JobStore``, ``AdminStore``)."""

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

    async def bump_pool_generation(self, pool: str) -> int:
        """Invalidate every binding of ``pool``; returns the new generation."""
        response = await self._table.call(
            "update_item",
            Key=self._table.key(keys.pool_key(pool)),
            UpdateExpression="ADD #generation :one",
            ExpressionAttributeNames={"#generation": "generation"},
            ExpressionAttributeValues={":one": number(1)},
            ReturnValues="UPDATED_NEW",
        )
        return items.get_int(response["Attributes"], "generation")

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
            writes.append(("Put", self._audit_put(dataclasses.replace(audit, version=version))))
        return version if await self._table.transact_if(writes) else None

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

    async def count_rejection(self, deployment_id: str) -> None:
        """One more consecutive upstream credential rejection (401/403) of a deployment."""
        await self._table.call(
            "update_item",
            Key=self._table.key(keys.health_key(deployment_id)),
            UpdateExpression="ADD #rejections :one",
            ExpressionAttributeNames={"#rejections": "credential_rejections"},
            ExpressionAttributeValues={":one": number(1)},
        )

    async def clear_rejections(self, deployment_id: str) -> None:
        """A success: the deployment's credentials work again."""
        await self._table.call(
            "update_item",
            Key=self._table.key(keys.health_key(deployment_id)),
            UpdateExpression="SET #rejections = :zero",
            ExpressionAttributeNames={"#rejections": "credential_rejections"},
            ExpressionAttributeValues={":zero": number(0)},
        )

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

    async def read_quotas(self, credentials: Sequence[str]) -> dict[str, QuotaStatus]:
        """The quota items of ``credentials`` (status views, the refresh job's report)."""
        wanted = [keys.quota_key(c) for c in credentials]
        found = await self._table.batch_get(wanted)
        return {
            c: items.quota_status_from(c, found[k])
            for c in credentials
            if (k := keys.quota_key(c)) in found
        }
