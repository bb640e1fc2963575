"""``DynamoUsageLog``: the request log and its aggregates on the state table.

Layout: ``state/usage_log.py``. A log record is a plain PutItem (several:
one BatchWriteItem per 25, unprocessed items retried); an aggregate is one
UpdateItem ``ADD`` (commutative: no lost updates, no condition needed). A
report reads the aggregates with one Query per day and shard, 8 in flight;
the newest records are one Query per shard of the hour, merged.
"""

from __future__ import annotations

import asyncio
import dataclasses
import heapq
import random
from decimal import Decimal
from typing import Any

from edgeproxy.errors import StoreUnavailable
from edgeproxy.state import usage_log as layout
from edgeproxy.state.dynamodb.dynamo import DynamoStore
from edgeproxy.state.dynamodb.schema import TableSchema
from edgeproxy.state.dynamodb.table import Table, translated_errors
from edgeproxy.state.items import Item, number, text
from edgeproxy.state.usage_log import RequestRecord, UsageRow

BATCH_WRITE_LIMIT = 25  # DynamoDB's BatchWriteItem maximum
BATCH_ATTEMPTS = 4
BATCH_BACKOFF_S = 0.05
RETRY_AFTER_S = 1.0
PARALLEL_QUERIES = 8  # a long report's day queries in flight at once
_COUNTERS = (
    "requests",
    "failures",
    "prompt_tokens",
    "completion_tokens",
    "cost_usd",
    "cache_read_tokens",
    "cache_write_tokens",
    "cache_hits",
    "saved_usd",
)
_FIELDS = [f.name for f in dataclasses.fields(RequestRecord)]


def record_item(record: RequestRecord) -> Item:
    """The record's attributes (None fields are left out)."""
    item: Item = {}
    for name in _FIELDS:
        value = getattr(record, name)
        if value is None:
            continue
        if isinstance(value, bool):
            item[name] = {"BOOL": value}
        elif isinstance(value, int | float):
            item[name] = number(value)
        elif isinstance(value, tuple):
            item[name] = {"L": [text(v) for v in value]}
        else:
            item[name] = text(str(value))
    return item


def record_from(item: Item) -> RequestRecord:
    """A stored record (unknown attributes ignored, missing ones default)."""
    values: dict[str, Any] = {}
    for f in dataclasses.fields(RequestRecord):
        raw = item.get(f.name)
        if raw is None:
            continue
        if "BOOL" in raw:
            values[f.name] = bool(raw["BOOL"])
        elif "L" in raw:
            values[f.name] = tuple(str(v["S"]) for v in raw["L"])
        elif "N" in raw:
            number_ = Decimal(raw["N"])
            integral = f.type in ("int", "int | None")
            values[f.name] = int(number_) if integral else float(number_)
        else:
            values[f.name] = str(raw["S"])
    return RequestRecord(**values)


def row_from(item: Item) -> UsageRow:
    def count(name: str) -> int:
        return int(Decimal(item[name]["N"])) if name in item else 0

    return UsageRow(
        hour=count("hour"),
        key_id=str(item["key_id"]["S"]),
        model=str(item["model"]["S"]),
        deployment=str(item["deployment"]["S"]),
        key_name=str(item.get("key_name", {}).get("S", "")),
        requests=count("requests"),
        failures=count("failures"),
        prompt_tokens=count("prompt_tokens"),
        completion_tokens=count("completion_tokens"),
        cost_usd=Decimal(item["cost_usd"]["N"]) if "cost_usd" in item else Decimal(0),
        cache_read_tokens=count("cache_read_tokens"),
        cache_write_tokens=count("cache_write_tokens"),
        labels=layout.labels_of(item.get(n, {}).get("S") for n in layout.LABELS),
        cache_hits=count("cache_hits"),
        saved_usd=Decimal(item["saved_usd"]["N"]) if "saved_usd" in item else Decimal(0),
    )


class DynamoUsageLog:
    """The ``UsageLogStore`` protocol on the state table (client injected)."""

    def __init__(
        self,
        client: Any,
        table_name: str,
        schema: TableSchema,
        rng: random.Random,
    ) -> None:
        """``rng``: picks each aggregate increment's shard (load spreading, not security);
        the process's generator, passed down from its composition root."""
        self._rng = rng
        self._client = client
        self._name = table_name
        self._table = Table(client, table_name, schema)
        self._schema = schema

    @classmethod
    def sharing(cls, store: DynamoStore) -> DynamoUsageLog:
        """One on ``store``'s table and client (its bounded budget and retries)."""
        table = store._table  # same package: the one client a process opens for the table
        return cls(table._client, table._name, store._schema, store._rng)

    def _item(self, record: RequestRecord) -> Item:
        item = {**self._table.key(layout.log_key(record)), **record_item(record)}
        item[self._schema.ttl] = number(record.expires_at)
        return item

    async def put_requests(self, records: list[RequestRecord]) -> None:
        """One PutItem for one record; BatchWriteItem (25 a call, in parallel) for several."""
        if len(records) == 1:
            await self._table.call("put_item", Item=self._item(records[0]))
            return
        chunks = [records[i : i + BATCH_WRITE_LIMIT] for i in range(0, len(records), 25)]
        await asyncio.gather(*(self._batch_write(c) for c in chunks))

    async def _batch_write(self, chunk: list[RequestRecord]) -> None:
        pending: dict[str, Any] = {
            self._name: [{"PutRequest": {"Item": self._item(r)}} for r in chunk]
        }
        for attempt in range(BATCH_ATTEMPTS):
            async with translated_errors("BatchWriteItem"):
                response = await self._client.batch_write_item(RequestItems=pending)
            pending = response.get("UnprocessedItems") or {}
            if not pending:
                return
            await asyncio.sleep(BATCH_BACKOFF_S * 2**attempt)  # throttled: back off
        raise StoreUnavailable(
            "DynamoDB BatchWriteItem: items still unprocessed after retries",
            retry_after=RETRY_AFTER_S,
        )

    async def add_usage(self, row: UsageRow, expires_at: float) -> None:
        """ADD the row's counters; SET its names (the key's latest name) and TTL."""
        values: dict[str, Any] = {
            ":requests": number(row.requests),
            ":failures": number(row.failures),
            ":prompt_tokens": number(row.prompt_tokens),
            ":completion_tokens": number(row.completion_tokens),
            ":cost_usd": {"N": str(row.cost_usd)},
            ":cache_read_tokens": number(row.cache_read_tokens),
            ":cache_write_tokens": number(row.cache_write_tokens),
            ":cache_hits": number(row.cache_hits),
            ":saved_usd": {"N": str(row.saved_usd)},
            ":ttl": number(expires_at),
            ":hour": number(row.hour),
            ":key_id": text(row.key_id),
            ":key_name": text(row.key_name),
            ":model": text(row.model),
            ":deployment": text(row.deployment),
        }
        names = {f"#{n}": n for n in _COUNTERS}
        names.update({"#ttl": self._schema.ttl, "#hour": "hour", "#key_id": "key_id"})
        names.update({"#key_name": "key_name", "#model": "model", "#deployment": "deployment"})
        sets: tuple[str, ...] = ("hour", "key_id", "key_name", "model", "deployment")
        for label, value in row.labels:
            values[f":{label}"] = text(value)
            names[f"#{label}"] = label
            sets += (label,)
        await self._table.call(
            "update_item",
            Key=self._table.key(layout.usage_key(row, self._rng.randrange(layout.LOG_SHARDS))),
            UpdateExpression="ADD "
            + ", ".join(f"#{n} :{n}" for n in _COUNTERS)
            + " SET #ttl = :ttl, "
            + ", ".join(f"#{n} = :{n}" for n in sets),
            ExpressionAttributeNames=names,
            ExpressionAttributeValues=values,
        )

    async def _query(
        self,
        pk: str,
        first: str,
        last: str,
        *,
        names: dict[str, str] | None = None,
        values: dict[str, Any] | None = None,
        **extra: Any,
    ) -> list[Item]:
        query: dict[str, Any] = {
            "KeyConditionExpression": "#pk = :pk AND #sk BETWEEN :first AND :last",
            "ExpressionAttributeNames": {
                "#pk": self._schema.pk,
                "#sk": self._schema.sk,
                **(names or {}),
            },
            "ExpressionAttributeValues": {
                ":pk": text(pk),
                ":first": text(first),
                ":last": text(last),
                **(values or {}),
            },
            **extra,
        }
        limit = extra.get("Limit")
        found: list[Item] = []
        while True:
            response = await self._table.call("query", **query)
            found.extend(response.get("Items", []))
            if "LastEvaluatedKey" not in response or (limit and len(found) >= limit):
                return found
            query["ExclusiveStartKey"] = response["LastEvaluatedKey"]

    def _live(self, item: Item, now: float) -> bool:
        ttl = item.get(self._schema.ttl)
        return ttl is None or float(ttl["N"]) > now

    async def read_usage_rows(self, first_hour: int, last_hour: int, now: float) -> list[UsageRow]:
        """The aggregates of ``[first_hour, last_hour]``: one Query per day and shard, summed."""
        first_day, last_day = first_hour * 3600 // 86400, last_hour * 3600 // 86400
        first, last = layout.hour_prefix(first_hour), layout.hour_prefix(last_hour) + "\uffff"
        gate = asyncio.Semaphore(PARALLEL_QUERIES)

        async def shard_rows(day: int, shard: int) -> list[Item]:
            async with gate:
                return await self._query(layout.usage_partition(day, shard), first, last)

        parts = await asyncio.gather(
            *(
                shard_rows(day, shard)
                for day in range(first_day, last_day + 1)
                for shard in range(layout.LOG_SHARDS)
            )
        )
        summed: dict[layout.Bucket, UsageRow] = {}
        for item in (item for items in parts for item in items if self._live(item, now)):
            row = row_from(item)
            held = summed.get(row.bucket)
            summed[row.bucket] = row if held is None else held.plus(row)
        return list(summed.values())

    async def read_requests(
        self,
        hour: int,
        limit: int,
        now: float,
        where: tuple[str, str] | None = None,
        end_user: str | None = None,
    ) -> list[RequestRecord]:
        """Up to ``limit`` records of ``hour``, newest first: each shard's newest, merged.

        ``where`` (label, value): a filter on each shard's Query, paged until ``limit``
        records pass it or the shard ends (a scoped admin's view of the log);
        ``end_user``: only the records of the requests that named it (the same way)."""
        gate = asyncio.Semaphore(PARALLEL_QUERIES)
        clauses: list[str] = []
        names: dict[str, str] = {}
        values: dict[str, Any] = {}
        if where is not None:
            label, value = where
            if label not in layout.LABELS:
                raise ValueError(f"no label {label!r}")
            clauses.append("#label = :label")
            names["#label"], values[":label"] = label, text(value)
        if end_user is not None:
            clauses.append("#end_user = :end_user")
            names["#end_user"], values[":end_user"] = "end_user", text(end_user)
        extra: dict[str, Any] = {}
        if clauses:
            extra = {"FilterExpression": " AND ".join(clauses), "names": names, "values": values}

        async def newest(shard: int) -> list[Item]:
            async with gate:
                return await self._query(
                    layout.log_partition(hour, shard),
                    "0",
                    "9" * 14,
                    ScanIndexForward=False,
                    Limit=limit,
                    ConsistentRead=True,
                    **extra,
                )

        shards = await asyncio.gather(*(newest(s) for s in range(layout.LOG_SHARDS)))
        by_time = heapq.merge(
            *(items[:limit] for items in shards),
            key=lambda item: str(item[self._schema.sk]["S"]),
            reverse=True,
        )
        live = (record_from(item) for item in by_time if self._live(item, now))
        return [record for _, record in zip(range(limit), live, strict=False)]
