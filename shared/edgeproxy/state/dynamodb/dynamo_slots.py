"""``DynamoSlots``: capacity slots (``max_parallel_requests``) of deployments and client keys.

One item per slot (``state/keys.py`` "Capacity slots"). Taking a slot is one
conditional write on one item, so two holders can never hold the same slot
and the held count never passes the cap; a crashed holder's slot lapses at
its ``until``. The TTL only tidies lapsed items away. A deployment's slots
live in its partition, a client key's in the key's.
"""

from __future__ import annotations

from collections.abc import Sequence

from edgeproxy.state import keys
from edgeproxy.state.dynamodb import conditions as cond
from edgeproxy.state.dynamodb.schema import TableSchema
from edgeproxy.state.dynamodb.table import Table
from edgeproxy.state.items import number, text

SLOT_RETENTION_S = 3600  # a lapsed slot item is deleted by TTL this long after its until


class DynamoSlots:
    """Take and release capacity slots (mixed into ``DynamoStore``)."""

    _table: Table
    _schema: TableSchema

    async def take_slot(
        self, deployment_id: str, order: Sequence[int], holder: str, until: float, now: float
    ) -> int | None:
        """Take the first of the slots ``order`` that is free at ``now``; None if all are held.

        ``holder``: the attempt's own id (its release names it); ``until``: when
        the slot lapses if never released (the attempt's deadline).
        """
        slots = [(s, keys.slot_key(deployment_id, s)) for s in order]
        return await self._take(slots, holder, until, now)

    async def release_slot(self, deployment_id: str, slot: int, holder: str) -> None:
        """Free ``slot`` if ``holder`` still holds it (a lapsed, retaken slot is left alone)."""
        await self._release(keys.slot_key(deployment_id, slot), holder)

    async def take_key_slot(
        self, key_id: str, order: Sequence[int], holder: str, until: float, now: float
    ) -> int | None:
        """``take_slot`` for a client key's slots (its ``max_parallel_requests``)."""
        slots = [(s, keys.key_slot_key(key_id, s)) for s in order]
        return await self._take(slots, holder, until, now)

    async def release_key_slot(self, key_id: str, slot: int, holder: str) -> None:
        """Free the key's ``slot`` if ``holder`` still holds it."""
        await self._release(keys.key_slot_key(key_id, slot), holder)

    async def _take(
        self, slots: Sequence[tuple[int, keys.Key]], holder: str, until: float, now: float
    ) -> int | None:
        for slot, item in slots:
            won, _ = await self._table.write_if(
                "put_item",
                Item={
                    **self._table.key(item),
                    "holder": text(holder),
                    "until": number(until),
                    self._schema.ttl: number(until + SLOT_RETENTION_S),
                },
                ConditionExpression=cond.SLOT_FREE,
                ExpressionAttributeNames={"#holder": "holder", "#until": "until"},
                ExpressionAttributeValues={":now": number(now)},
            )
            if won:
                return slot
        return None

    async def _release(self, item: keys.Key, holder: str) -> None:
        await self._table.write_if(
            "delete_item",
            Key=self._table.key(item),
            ConditionExpression=cond.SLOT_HELD_BY,
            ExpressionAttributeNames={"#holder": "holder"},
            ExpressionAttributeValues={":holder": text(holder)},
        )
