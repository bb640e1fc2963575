"""The counters of the levels above a key (team, organization, end user): one transaction each way.

Items (partition ``level#<partition>``, ``routing.judge.levels``):

================  =======================  ======================================
item              sk                       attributes
================  =======================  ======================================
minute bucket     ``usage#<minute>``       requests, tokens, ttl
spend             ``spend`` / ``spend#<d>``  spend_usd, tokens, budget_usd (no TTL)
request slot      ``slot#<n>``             holder, until, ttl
================  =======================  ======================================

``reserve_levels`` makes every level's writes in one TransactWriteItems: per
level, the request counted and its token estimate added to the minute bucket
under the rpm and tpm limits, its cost estimate added to the spend under the
budget, one of its slots taken while free; all land or none. When it is
cancelled, the reasons say which item's condition failed: a held slot is
retried on another slot, anything else is the refusal. ``settle_levels``
adds (actual - estimate) to what was reserved and frees the slots, in one
transaction too, beside one ADD per budget, sent with it (one round trip), that
returns the spend it left to the budget alerts (``level_watcher``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from edgeproxy.routing.access import ACCOUNT_SEP
from edgeproxy.routing.judge.levels import LevelCharge, LevelCounts
from edgeproxy.routing.judge.reasons import Write
from edgeproxy.state.dynamodb import conditions as cond
from edgeproxy.state.dynamodb.dynamo_alerts import LevelWatcher
from edgeproxy.state.dynamodb.dynamo_key_reserve import SPEND_ROOM, TOKENS_ROOM
from edgeproxy.state.dynamodb.dynamo_keys import KEY_UNDER_LIMIT
from edgeproxy.state.dynamodb.dynamo_slots import SLOT_RETENTION_S
from edgeproxy.state.dynamodb.schema import TableSchema
from edgeproxy.state.dynamodb.table import Table
from edgeproxy.state.items import get_float, get_int, number, text
from edgeproxy.state.keys import Key
from edgeproxy.state.levels import Failed, Settlement


def _pk(partition: str) -> str:
    return "level#" + partition.replace("%", "%25").replace("#", "%23")


def level_usage_key(partition: str, minute: int) -> Key:
    """Requests and tokens of one level in one minute."""
    return _pk(partition), f"usage#{minute}"


def level_spend_key(account: str) -> Key:
    """Spend of one level's account (``period_account``: its partition, @ a period start)."""
    partition, _, period = account.partition(ACCOUNT_SEP)
    return _pk(partition), f"spend#{period}" if period else "spend"


def level_slot_key(partition: str, slot: int) -> Key:
    """Request slot ``slot`` of one level's ``max_parallel_requests``."""
    return _pk(partition), f"slot#{slot}"


class DynamoLevels:
    """The level calls of ``DynamoStore``."""

    _table: Table
    _schema: TableSchema
    level_watcher: LevelWatcher | None

    def _bucket(self, c: LevelCharge, tokens: int, conditional: bool) -> dict[str, Any]:
        names = {"#tokens": "tokens", "#ttl": self._schema.ttl}
        values: dict[str, Any] = {":tokens": number(tokens), ":ttl": number(c.expires)}
        update = "ADD #tokens :tokens SET #ttl = :ttl"
        clauses: list[str] = []
        if conditional:
            update = "ADD #requests :one, #tokens :tokens SET #ttl = :ttl"
            values[":one"] = number(1)
            names["#requests"] = "requests"
            if c.rpm is not None:
                clauses.append(f"({KEY_UNDER_LIMIT})")
                values[":limit"] = number(c.rpm)
            if c.tpm is not None:
                clauses.append(f"({TOKENS_ROOM})")
                values[":room"] = number(max(0, c.tpm - tokens))
        body: dict[str, Any] = {
            "Key": self._table.key(level_usage_key(c.limits.partition, c.minute)),
            "UpdateExpression": update,
            "ExpressionAttributeNames": names,
            "ExpressionAttributeValues": values,
        }
        if clauses:
            body["ConditionExpression"] = " AND ".join(clauses)
            body["ReturnValuesOnConditionCheckFailure"] = "ALL_OLD"
        return body

    def _spend(
        self, c: LevelCharge, tokens: int, spend: float, conditional: bool
    ) -> dict[str, Any]:
        body: dict[str, Any] = {
            "Key": self._table.key(level_spend_key(c.account)),
            "UpdateExpression": "ADD #spend :spend, #tokens :tokens",
            "ExpressionAttributeNames": {"#spend": "spend_usd", "#tokens": "tokens"},
            "ExpressionAttributeValues": {":spend": number(spend), ":tokens": number(tokens)},
        }
        if conditional and c.budget is not None:
            body["UpdateExpression"] += " SET #budget = :budget"
            body["ExpressionAttributeNames"]["#budget"] = "budget_usd"
            body["ExpressionAttributeValues"].update(
                {":budget": number(c.budget), ":room": number(max(0.0, c.budget - spend))}
            )
            body["ConditionExpression"] = SPEND_ROOM
        return body

    def _slot(self, c: LevelCharge, slot: int, holder: str, until: float, now: float) -> Any:
        return {
            "Item": {
                **self._table.key(level_slot_key(c.limits.partition, slot)),
                "holder": text(holder),
                "until": number(until),
                self._schema.ttl: number(until + SLOT_RETENTION_S),
            },
            "ConditionExpression": cond.SLOT_FREE,
            "ExpressionAttributeNames": {"#holder": "holder", "#until": "until"},
            "ExpressionAttributeValues": {":now": number(now)},
        }

    async def reserve_levels(
        self,
        charges: Sequence[LevelCharge],
        slots: Sequence[int | None],
        holder: str,
        until: float,
        now: float,
    ) -> Failed | None:
        """Every charge's writes in one transaction (``slots[i]``: the slot charge ``i``
        takes, None: none); None when all landed, else what failed (nothing landed)."""
        writes: list[tuple[str, dict[str, Any]]] = []
        owners: list[tuple[int, Write | None]] = []
        for i, c in enumerate(charges):
            if c.bucket:
                writes.append(("Update", self._bucket(c, c.tokens if c.tpm else 0, True)))
                owners.append((i, None))  # rpm or tpm: told apart by the stored item
            if c.budget is not None:
                writes.append(("Update", self._spend(c, c.tokens, c.spend_usd, True)))
                owners.append((i, Write.SPEND))
            slot = slots[i]
            if slot is not None:
                writes.append(("Put", self._slot(c, slot, holder, until, now)))
                owners.append((i, Write.PARALLEL))
        if not writes:
            return None
        reasons = await self._table.transact_reasons(writes)
        if reasons is None:
            return None
        failed = [(owners[n], r) for n, r in enumerate(reasons) if r[0] == "ConditionalCheckFailed"]
        if not failed:
            return Failed(None, None)  # a conflict with a concurrent transaction: retry
        # A limit's refusal wins over a held slot (another slot would not help).
        failed.sort(key=lambda f: f[0][1] is Write.PARALLEL)
        (index, write), (_, item) = failed[0]
        if write is None:
            write = _bucket_write(charges[index], item)
        elif write is Write.SPEND and self.level_watcher is not None:
            spend = get_float(item, "spend_usd")
            await self.level_watcher.level_budget_refused(charges[index], spend)
        return Failed(index, write)

    async def free_level_slots(self, partition: str, cap: int, now: float) -> list[int]:
        """The slots below ``cap`` of the level's ``partition`` free at ``now`` (one
        strongly consistent Query)."""
        pk, _ = level_slot_key(partition, 0)
        held: set[int] = set()
        query: dict[str, Any] = {
            "KeyConditionExpression": "#pk = :pk AND begins_with(#sk, :slot)",
            "ExpressionAttributeNames": {"#pk": self._schema.pk, "#sk": self._schema.sk},
            "ExpressionAttributeValues": {":pk": text(pk), ":slot": text("slot#")},
            "ConsistentRead": True,
        }
        while True:
            page = await self._table.call("query", **query)
            for item in page.get("Items", []):
                until = float(item.get("until", {}).get("N", "0"))
                if until >= now:
                    held.add(int(item[self._schema.sk]["S"].removeprefix("slot#")))
            if "LastEvaluatedKey" not in page:
                break
            query["ExclusiveStartKey"] = page["LastEvaluatedKey"]
        return [slot for slot in range(cap) if slot not in held]

    async def level_counts(self, charges: Sequence[LevelCharge], now: float) -> list[LevelCounts]:
        """What each charge's counters hold at ``now``, read without a write: one
        BatchGetItem of the minute buckets and spends, one Query per capped level's slots."""
        wanted = [level_usage_key(c.limits.partition, c.minute) for c in charges]
        wanted += [level_spend_key(c.account) for c in charges]
        found = await self._table.batch_get(wanted)
        out: list[LevelCounts] = []
        for c in charges:
            bucket = found.get(level_usage_key(c.limits.partition, c.minute), {})
            spend = found.get(level_spend_key(c.account), {})
            held = 0
            if c.parallel is not None and c.parallel > 0:
                held = c.parallel - len(
                    await self.free_level_slots(c.limits.partition, c.parallel, now)
                )
            out.append(
                LevelCounts(
                    requests=get_int(bucket, "requests"),
                    tokens=get_int(bucket, "tokens"),
                    spend_usd=get_float(spend, "spend_usd"),
                    in_flight=held,
                    spend_seen="spend_usd" in spend,
                    tokens_seen="tokens" in bucket,
                )
            )
        return out

    async def settle_levels(self, settled: Sequence[Settlement], holder: str) -> None:
        """Add each settlement's difference and free its slot, in one transaction (a slot
        that lapsed and was retaken meanwhile is left alone: then without the slots)."""
        writes: list[tuple[str, dict[str, Any]]] = []
        frees: list[tuple[str, dict[str, Any]]] = []
        spends: list[Settlement] = []
        for s in settled:
            c = s.charge
            if c.tpm is not None and s.tokens:
                writes.append(("Update", self._bucket(c, s.tokens, False)))
            if c.budget is not None:
                spends.append(s)
            if s.slot is not None:
                frees.append(
                    (
                        "Delete",
                        {
                            "Key": self._table.key(level_slot_key(c.limits.partition, s.slot)),
                            "ConditionExpression": cond.SLOT_HELD_BY,
                            "ExpressionAttributeNames": {"#holder": "holder"},
                            "ExpressionAttributeValues": {":holder": text(holder)},
                        },
                    )
                )
        await asyncio.gather(
            self._settle_counts(writes, frees), *(self._settle_spend(s) for s in spends)
        )

    async def _settle_counts(
        self, writes: list[tuple[str, dict[str, Any]]], frees: list[tuple[str, dict[str, Any]]]
    ) -> None:
        if not writes and not frees:
            return
        if await self._table.transact_reasons(writes + frees) is None or not writes:
            return
        await self._table.transact_reasons(writes)

    async def _settle_spend(self, s: Settlement) -> None:
        """One budget's difference, an ADD that returns the spend it left (for the alerts,
        ``service.alerts.watcher.LevelBudgetAlerts``: no extra read)."""
        body = self._spend(s.charge, s.tokens, s.spend_usd, False)
        settled = await self._table.call("update_item", **body, ReturnValues="ALL_NEW")
        if self.level_watcher is not None:
            spend = get_float(settled.get("Attributes", {}), "spend_usd")
            await self.level_watcher.level_spend(s.charge, spend)


def _bucket_write(charge: LevelCharge, item: dict[str, Any]) -> Write:
    """Which of a minute bucket's limits its stored ``item`` is at: rpm first."""
    requests = item.get("requests", {}).get("N")
    if charge.rpm is not None and (
        charge.tpm is None or (requests is not None and float(requests) >= charge.rpm)
    ):
        return Write.RPM
    return Write.TOKENS
