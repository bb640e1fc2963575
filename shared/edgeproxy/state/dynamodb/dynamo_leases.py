"""``DynamoLeases``: idempotency leases, one item each (``state/keys.py`` "Idempotency leases").

Taking a lease is one conditional put: at most one call holds a key's lease
at a time, fleet-wide, and a lapsed or expired one is taken over by the same
write. Finishing and releasing name the owner, so a call whose lease lapsed
(and was taken over) can never overwrite or delete its successor's.
"""

from __future__ import annotations

import base64

from edgeproxy.routing.idempotency import Lease, LeaseState
from edgeproxy.state import keys
from edgeproxy.state.dynamodb import conditions as cond
from edgeproxy.state.dynamodb.schema import TableSchema
from edgeproxy.state.dynamodb.table import Table
from edgeproxy.state.items import Item, get_float, get_text, number, text


class DynamoLeases:
    """``LeaseStore`` (mixed into ``DynamoStore``)."""

    _table: Table
    _schema: TableSchema

    async def read_lease(self, scope: str, key: str) -> Lease | None:
        response = await self._table.call(
            "get_item",
            Key=self._table.key(keys.idempotency_key(scope, key)),
            ConsistentRead=True,
        )
        item = response.get("Item")
        return None if not item else self._lease_from(item)

    async def take_lease(
        self, scope: str, key: str, lease: Lease, now: float
    ) -> tuple[bool, Lease | None]:
        item: Item = {
            **self._table.key(keys.idempotency_key(scope, key)),
            "request_hash": text(lease.request_hash),
            "owner": text(lease.owner),
            "state": text(lease.state.value),
            "lease_until": number(lease.lease_until),
            self._schema.ttl: number(lease.expires_at),
        }
        won, stored = await self._table.write_if(
            "put_item",
            Item=item,
            ConditionExpression=cond.LEASE_TAKEABLE,
            ExpressionAttributeNames={
                "#pk": self._schema.pk,
                "#ttl": self._schema.ttl,
                "#state": "state",
                "#lease": "lease_until",
            },
            ExpressionAttributeValues={":now": number(now), ":running": text("running")},
            ReturnValuesOnConditionCheckFailure="ALL_OLD",
        )
        if won:
            return True, lease
        return False, self._lease_from(stored) if stored else None

    async def finish_lease(self, scope: str, key: str, owner: str, answer: bytes) -> bool:
        won, _ = await self._table.write_if(
            "update_item",
            Key=self._table.key(keys.idempotency_key(scope, key)),
            UpdateExpression="SET #state = :done, #answer = :answer",
            ConditionExpression=cond.LEASE_HELD_BY,
            ExpressionAttributeNames={
                "#state": "state",
                "#answer": "answer",
                "#owner": "owner",
            },
            ExpressionAttributeValues={
                ":done": text(LeaseState.DONE.value),
                ":answer": text(base64.b64encode(answer).decode("ascii")),
                ":owner": text(owner),
                ":running": text(LeaseState.RUNNING.value),
            },
        )
        return won

    async def release_lease(self, scope: str, key: str, owner: str) -> None:
        await self._table.write_if(
            "delete_item",
            Key=self._table.key(keys.idempotency_key(scope, key)),
            ConditionExpression=cond.LEASE_HELD_BY,
            ExpressionAttributeNames={"#state": "state", "#owner": "owner"},
            ExpressionAttributeValues={
                ":owner": text(owner),
                ":running": text(LeaseState.RUNNING.value),
            },
        )

    def _lease_from(self, item: Item) -> Lease:
        return Lease(
            request_hash=get_text(item, "request_hash") or "",
            owner=get_text(item, "owner") or "",
            state=LeaseState(get_text(item, "state") or LeaseState.RUNNING.value),
            lease_until=get_float(item, "lease_until"),
            expires_at=get_float(item, self._schema.ttl),
            answer=_answer(get_text(item, "answer")),
        )


def _answer(stored: str | None) -> bytes | None:
    # Kept as base64 text: the store's JSON wire client (``aws/wire``) carries strings.
    return None if stored is None else base64.b64decode(stored)
