"""Stored answers in the state table (``state/answers.py`` has the item layout).

A write is one PutItem (one part) or one TransactWriteItems (several), so a
reader never sees some parts of a new answer beside none of the others' ; a
read is one eventually consistent Query of the answer's partition (half the
read units of a strong read: a write of the last second or so may be missed,
which costs one more upstream call, never a wrong answer); a request that
waited for an identical one in flight reads strongly (it knows the write landed).
"""

from __future__ import annotations

import base64
import uuid
from typing import Any

from edgeproxy.state.answers import (
    StoredAnswer,
    answer_partition,
    part_key,
    slices,
)
from edgeproxy.state.dynamodb.schema import TableSchema
from edgeproxy.state.dynamodb.table import Table
from edgeproxy.state.items import Item, get_float, get_int, get_text, number, text


class DynamoAnswers:
    """``AnswerStore``, mixed into ``DynamoStore``."""

    _table: Table
    _schema: TableSchema

    async def put_answer(self, digest: str, answer: StoredAnswer, expires_at: float) -> None:
        """Store ``answer``'s parts, all or none (see the module doc)."""
        parts = slices(answer.encoded())
        version = uuid.uuid4().hex
        pk = answer_partition(digest)
        items: list[Item] = [
            {
                **self._table.key((pk, part_key(n))),
                "body": {"B": base64.b64encode(part).decode("ascii")},
                "version": text(version),
                "parts": number(len(parts)),
                self._schema.ttl: number(expires_at),
            }
            for n, part in enumerate(parts)
        ]
        if len(items) == 1:
            await self._table.call("put_item", Item=items[0])
            return
        await self._table.transact_if([("Put", {"Item": item}) for item in items])

    async def get_answer(
        self, digest: str, now: float, *, consistent: bool = False
    ) -> StoredAnswer | None:
        """The whole answer under ``digest``, or None (absent, expired, torn, unreadable);
        ``consistent``: a strong read (a waiter that saw the writer finish)."""
        response = await self._table.call(
            "query",
            KeyConditionExpression="#pk = :pk",
            ExpressionAttributeNames={"#pk": self._schema.pk},
            ExpressionAttributeValues={":pk": text(answer_partition(digest))},
            ConsistentRead=consistent,
        )
        found: dict[str, Item] = {
            get_text(item, self._schema.sk) or "": item for item in response.get("Items", [])
        }
        first = found.get(part_key(0))
        if first is None or get_float(first, self._schema.ttl) <= now:
            return None
        version, count = get_text(first, "version"), get_int(first, "parts")
        blob = b""
        for n in range(count):
            item = found.get(part_key(n))
            if item is None or get_text(item, "version") != version:
                return None  # torn by a concurrent writer: a miss
            blob += _bytes(item)
        try:
            return StoredAnswer.decoded(blob)
        except ValueError:
            return None


def _bytes(item: Item) -> bytes:
    # DynamoDB's JSON protocol carries binary values as base64 text (``aws/dynamodb.py``
    # sends and returns the wire's shape); a botocore client would hand back bytes.
    value: Any = item.get("body", {}).get("B", "")
    return base64.b64decode(value) if isinstance(value, str) else bytes(value)
