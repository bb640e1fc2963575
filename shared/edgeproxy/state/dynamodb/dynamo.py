"""``DynamoStore``: the ``Store`` protocol on one DynamoDB table.

Each method is one request to the low-level client (``read_pool`` one
BatchGetItem per 100 keys, sent in parallel). Conditional writes name their
condition below, with the race it prevents; a failed condition is an expected
outcome, answered with the stored item DynamoDB returns alongside it
(``ReturnValuesOnConditionCheckFailure=ALL_OLD``), never with a second read.
The client is ``aws.dynamodb.DynamoClient`` (any client with botocore's
low-level call shape works). Every other botocore error becomes a ``StoreError`` in ``table.translated_errors``.

The store is one class per protocol it implements, composed here (the
table in ``DynamoStore``'s docstring); the request path's counters and
standing writes are in this module. Reads are in ``DynamoReads``:
``dynamo_reads``' docstring says which are eventually consistent and why a
stale read cannot break a transition.

    >>> client = await DynamoClient.open(session, "eu-west-1", url, options, rng.random)
    >>> schema = TableSchema.from_env_value("pk,sk,expires_at")
    >>> store = DynamoStore(client, "edgeproxy-state", schema, rng)
    >>> snapshot = await store.read_pool(request)
"""

from __future__ import annotations

import dataclasses
import random
from typing import Any

from edgeproxy.errors import StoreError
from edgeproxy.routing import allowance
from edgeproxy.routing.snapshot import (
    Binding,
    BindingKey,
    Circuit,
)
from edgeproxy.state import items, keys
from edgeproxy.state.counter_shards import ShardCounts
from edgeproxy.state.dynamodb import conditions as cond
from edgeproxy.state.dynamodb.dynamo_alerts import DynamoAlerts, LevelWatcher, SpendWatcher
from edgeproxy.state.dynamodb.dynamo_answers import DynamoAnswers
from edgeproxy.state.dynamodb.dynamo_audit import DynamoAudit
from edgeproxy.state.dynamodb.dynamo_config import DynamoConfig
from edgeproxy.state.dynamodb.dynamo_jobs import DynamoJobs
from edgeproxy.state.dynamodb.dynamo_key_lifecycle import DynamoKeyLifecycle
from edgeproxy.state.dynamodb.dynamo_key_reserve import DynamoKeyReserve
from edgeproxy.state.dynamodb.dynamo_keys import DynamoKeys
from edgeproxy.state.dynamodb.dynamo_leases import DynamoLeases
from edgeproxy.state.dynamodb.dynamo_levels import DynamoLevels
from edgeproxy.state.dynamodb.dynamo_reads import DynamoReads
from edgeproxy.state.dynamodb.dynamo_slots import DynamoSlots
from edgeproxy.state.dynamodb.dynamo_teams import DynamoTeams
from edgeproxy.state.dynamodb.schema import TableSchema
from edgeproxy.state.dynamodb.table import Table
from edgeproxy.state.items import number, text
from edgeproxy.state.store import UsageDelta

CAPACITY_RETENTION_S = 3600  # a throttle item is deleted by TTL this long after it ended


class DynamoCounters:
    """``CounterStore`` (``record``, ``record_key_usage``: commutative ADDs) and ``Admitter``
    (``admit``: the same ADD, conditional on the bucket's limits), mixed into ``DynamoStore``."""

    _table: Table
    _schema: TableSchema
    _shards: ShardCounts
    spend_watcher: SpendWatcher | None

    async def _add(
        self, key: keys.Key, counters: dict[str, float], expires_at: float, **condition: Any
    ) -> bool:
        """ADD ``counters`` to one usage item and refresh its TTL; False if ``condition`` failed."""
        names = {f"#c{i}": name for i, name in enumerate(counters)}
        values = {f":c{i}": number(v) for i, v in enumerate(counters.values())}
        names["#ttl"] = self._schema.ttl
        values[":ttl"] = number(expires_at)
        names.update(condition.pop("ExpressionAttributeNames", {}))
        values.update(condition.pop("ExpressionAttributeValues", {}))
        added = ", ".join(f"#c{i} :c{i}" for i in range(len(counters)))
        won, _ = await self._table.write_if(
            "update_item",
            Key=self._table.key(key),
            UpdateExpression=f"ADD {added} SET #ttl = :ttl",
            ExpressionAttributeNames=names,
            ExpressionAttributeValues=values,
            **condition,
        )
        return won

    async def admit(
        self,
        deployment_id: str,
        minute: int,
        rpm_limit: int | None,
        expires_at: float,
        *,
        tpm_limit: int | None = None,
        reserve: int = 0,
        shards: int = 1,
        prefill: tuple[int, int] = (0, 0),
    ) -> bool:
        """Count one attempt start; with limits, only while the bucket has room for it.

        With ``shards`` > 1 the start lands on one shard item: a random one
        first, then each other in turn (``allowance.probe_order``), each
        holding its ``allowance`` of the limits, so the limits stay exact.
        """
        if (rpm_limit is not None and rpm_limit <= 0) or (tpm_limit is not None and tpm_limit <= 0):
            return False
        shards = self._shards.note(deployment_id, shards)
        for shard in allowance.probe_order(shards, self._shards.start(shards)):
            rpm = None if rpm_limit is None else allowance.allowance(rpm_limit, shards, shard)
            tpm = None if tpm_limit is None else allowance.allowance(tpm_limit, shards, shard)
            if rpm == 0:
                continue  # a limit below the shard count: this shard holds none of it
            # A reservation over a shard's tpm part still fits an empty shard, as an
            # estimate over the whole limit fits an empty minute (TOKENS_FIT with room 0).
            key = keys.usage_shard_key(deployment_id, minute, shard)
            if await self._admit_one(key, rpm, expires_at, tpm, reserve, prefill):
                return True
        return False

    async def _admit_one(
        self,
        key: keys.Key,
        rpm_limit: int | None,
        expires_at: float,
        tpm_limit: int | None,
        reserve: int,
        prefill: tuple[int, int] = (0, 0),
    ) -> bool:
        """The conditional start count on one (shard) item (the prefill lease rides it)."""
        parts: list[tuple[str, str, str, str, int]] = []
        if rpm_limit is not None:
            parts.append((cond.UNDER_LIMIT, "#requests", "requests", ":limit", rpm_limit))
        if tpm_limit is not None:
            room = max(0, tpm_limit - reserve)
            parts.append((cond.TOKENS_FIT, "#reserved", "reserved_tokens", ":room", room))
        condition: dict[str, Any] = {}
        if parts:
            condition = {
                "ConditionExpression": " AND ".join(f"({p[0]})" for p in parts),
                "ExpressionAttributeNames": {p[1]: p[2] for p in parts},
                "ExpressionAttributeValues": {p[3]: number(p[4]) for p in parts},
            }
        counters: dict[str, float] = {"requests": 1, "inflight": 1}
        if reserve:
            counters["reserved_tokens"] = reserve
        if prefill[0]:
            counters["prefill_tokens"] = prefill[0]
        if prefill[1]:
            counters["prefill_elephants"] = prefill[1]
        return await self._add(key, counters, expires_at, **condition)

    async def record(self, delta: UsageDelta, expires_at: float) -> None:
        """Apply the non-zero fields of ``delta`` to its bucket with ADD.

        A sharded bucket takes it on a random shard below the count the last
        admission or read of the deployment passed (readers sum the shards).
        """
        counters = items.usage_counters(delta)
        if counters:
            shard = self._shards.pick(delta.deployment_id)
            key = keys.usage_shard_key(delta.deployment_id, delta.minute, shard)
            await self._add(key, counters, expires_at)

    async def record_key_usage(
        self, key_id: str, minute: int | None, tokens: int, spend_usd: float, expires_at: float
    ) -> None:
        """ADD ``tokens`` to the key's bucket ``minute`` (None: no bucket) and to its spend."""
        if tokens and minute is not None:
            await self._table.call(
                "update_item",
                Key=self._table.key(keys.key_usage_key(key_id, minute)),
                UpdateExpression="ADD #tokens :tokens SET #ttl = :ttl",
                ExpressionAttributeNames={"#tokens": "tokens", "#ttl": self._schema.ttl},
                ExpressionAttributeValues={":tokens": number(tokens), ":ttl": number(expires_at)},
            )
        if tokens or spend_usd:
            settled = await self._table.call(
                "update_item",
                Key=self._table.key(keys.key_spend_key(key_id)),
                UpdateExpression="ADD #spend :spend, #tokens :tokens",
                ExpressionAttributeNames={"#spend": "spend_usd", "#tokens": "tokens"},
                ExpressionAttributeValues={":spend": number(spend_usd), ":tokens": number(tokens)},
                ReturnValues="ALL_NEW",  # the settled spend, for budget alerts: no extra read
            )
            if self.spend_watcher is not None:
                await self.spend_watcher.spend_moved(
                    key_id, spend_usd, settled.get("Attributes", {})
                )


class DynamoStandingWrites:
    """``StandingWrites`` (an outcome's writes to what routing reads next) and
    ``BindingResets`` (an operator's), mixed into ``DynamoStore``."""

    _table: Table
    _schema: TableSchema

    async def write_circuit(self, new: Circuit, expected_version: int) -> Circuit | None:
        """Store ``new`` if the stored version is ``expected_version``; else return the winner."""
        if new.version != expected_version + 1:
            raise ValueError(f"circuit version must be {expected_version + 1}, got {new.version}")
        condition: dict[str, Any]
        if expected_version == 0:
            condition = {
                "ConditionExpression": cond.ITEM_ABSENT,
                "ExpressionAttributeNames": {"#pk": self._schema.pk},
            }
        else:
            condition = {
                "ConditionExpression": cond.VERSION_UNCHANGED,
                "ExpressionAttributeNames": {"#version": "version"},
                "ExpressionAttributeValues": {":expected": number(expected_version)},
            }
        won, stored = await self._table.write_if(
            "put_item",
            Item={
                **self._table.key(keys.circuit_key(new.deployment_id)),
                **items.circuit_item(new),
            },
            ReturnValuesOnConditionCheckFailure="ALL_OLD",
            **condition,
        )
        return None if won else items.circuit_from(new.deployment_id, stored)

    async def extend_capacity(self, domain: str, until: float) -> None:
        """Throttle ``domain`` until ``until``; a longer stored throttle is kept."""
        await self._table.write_if(
            "update_item",
            Key=self._table.key(keys.capacity_key(domain)),
            UpdateExpression="SET #until = :until, #ttl = :ttl ADD #version :one",
            ConditionExpression=cond.THROTTLE_SHORTER,
            ExpressionAttributeNames={
                "#until": "throttled_until",
                "#ttl": self._schema.ttl,
                "#version": "version",
            },
            ExpressionAttributeValues={
                ":until": number(until),
                ":ttl": number(int(until) + CAPACITY_RETENTION_S),
                ":one": number(1),
            },
        )

    async def put_binding(self, binding: Binding, expected: Binding | None) -> Binding:
        """Create (``expected`` None) or renew a binding; returns what is stored now.

        The store assigns the version: ``expected.version + 1``, or 1 on create.
        A stored binding that has expired still blocks a create; pass it as
        ``expected`` to replace it. If the binding to renew was deleted
        meanwhile, the write is retried once as a create.
        """
        stored = await self._put_binding_if(binding, expected)
        if stored is None and expected is not None:
            stored = await self._put_binding_if(binding, None)
        if stored is None:  # unreachable: a failed create returns the item that blocked it
            raise StoreError("binding changed twice during one put_binding")
        return stored

    async def _put_binding_if(self, binding: Binding, expected: Binding | None) -> Binding | None:
        """One conditional put: the binding now stored, or None if there is none."""
        version = 1 if expected is None else expected.version + 1
        item = {
            **self._table.key(keys.binding_key(binding.key)),
            **items.binding_item(binding, version),
            self._schema.ttl: number(binding.expires_at),
        }
        condition: dict[str, Any] = {
            "ConditionExpression": cond.ITEM_ABSENT,
            "ExpressionAttributeNames": {"#pk": self._schema.pk},
        }
        if expected is not None:
            condition = {
                "ConditionExpression": cond.BINDING_UNCHANGED,
                "ExpressionAttributeNames": {"#deployment": "deployment_id", "#version": "version"},
                "ExpressionAttributeValues": {
                    ":deployment": text(expected.deployment_id),
                    ":expected": number(expected.version),
                },
            }
        won, stored = await self._table.write_if(
            "put_item", Item=item, ReturnValuesOnConditionCheckFailure="ALL_OLD", **condition
        )
        if won:
            return dataclasses.replace(binding, version=version)
        return items.binding_from(binding.key, stored, self._schema.ttl) if stored else None

    async def delete_binding(self, key: BindingKey, deployment_id: str | None = None) -> None:
        """Drop a binding; with ``deployment_id``, only if it still names that deployment."""
        condition: dict[str, Any] = {}
        if deployment_id is not None:
            condition = {
                "ConditionExpression": cond.BINDING_NAMES,
                "ExpressionAttributeNames": {"#deployment": "deployment_id"},
                "ExpressionAttributeValues": {":deployment": text(deployment_id)},
            }
        await self._table.write_if(
            "delete_item", Key=self._table.key(keys.binding_key(key)), **condition
        )

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


class DynamoStore(
    DynamoReads,
    DynamoConfig,
    DynamoCounters,
    DynamoStandingWrites,
    DynamoSlots,
    DynamoKeys,
    DynamoKeyReserve,
    DynamoLevels,
    DynamoKeyLifecycle,
    DynamoJobs,
    DynamoAudit,
    DynamoTeams,
    DynamoAlerts,
    DynamoLeases,
    DynamoAnswers,
):
    """The ``Store`` protocol on one table; the client is injected, never built here.

    Each protocol's calls are in one piece (the protocols each piece implements,
    its module; ``tests/unit/state/test_store_pieces.py`` keeps this table true):

        DynamoReads           PoolSource, PoolBatches                     dynamo_reads
        DynamoConfig          ConfigSource, ConfigStore                   dynamo_config
        DynamoCounters        CounterSink, SpendSink, Admitter            dynamo
        DynamoStandingWrites  StandingWrites, BindingDrops, BindingResets dynamo
        DynamoSlots           Slots, KeySlotStore                         dynamo_slots
        DynamoKeys            KeyStore, KeyFinder, KeyRegistry            dynamo_keys
        DynamoKeyReserve      KeyReserveStore                             dynamo_key_reserve
        DynamoLevels          LevelStore                                  dynamo_levels
        DynamoKeyLifecycle    KeyLifecycleStore                           dynamo_key_lifecycle
        DynamoJobs            JobStore, QuotaSink, UsageSource            dynamo_jobs
        DynamoAudit           AuditLog                                    dynamo_audit
        DynamoTeams           TeamStore                                   dynamo_teams
        DynamoAlerts          AlertStore                                  dynamo_alerts
        DynamoLeases          LeaseStore                                  dynamo_leases
        DynamoAnswers         AnswerStore                                 dynamo_answers

    So ``CounterStore`` (``CounterSink`` and ``SpendSink``) is ``DynamoCounters``.
    """

    def __init__(
        self, client: Any, table_name: str, schema: TableSchema, rng: random.Random
    ) -> None:
        """``rng``: the process's generator (``clients.process_rng``), passed down: the store
        makes none of its own."""
        self._table = Table(client, table_name, schema)
        self._rng = rng
        self._schema = schema
        # Told of every spend ADD's settled value (``service.alerts.watcher``); None: no alerts.
        self.spend_watcher: SpendWatcher | None = None
        # Told of each team's, organization's and end user's settled spend and budget refusal.
        self.level_watcher: LevelWatcher | None = None
        self._shards = ShardCounts(rng)
