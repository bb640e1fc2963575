"""Stored answers on the embedded DynamoDB server: round trip, parts, size limit, expiry, tears."""

from __future__ import annotations

import base64
import os
from typing import Any

import pytest

from edgeproxy.state.answers import (
    MAX_STORED_BYTES,
    PART_BYTES,
    AnswerTooLarge,
    StoredAnswer,
    answer_partition,
    part_key,
)
from edgeproxy.state.dynamodb.dynamo import DynamoStore
from edgeproxy.state.dynamodb.schema import TableSchema

NOW = 1_700_000_000.0
LATER = NOW + 600


@pytest.fixture
def calls(dynamo_client: Any) -> list[str]:
    seen: list[str] = []
    dynamo_client.hooks.append(lambda operation, _answer: seen.append(operation))
    return seen


def _answer(body: bytes, *, stream: bool = False) -> StoredAnswer:
    return StoredAnswer(
        status=200,
        content_type="text/event-stream; charset=utf-8" if stream else "application/json",
        body=body,
        stored_at=NOW,
        headers=(("x-edgeproxy-deployment", "d1"),),
        stream=stream,
        meta={"cost_usd": 0.25, "prompt_tokens": 7},
    )


async def test_a_stored_answer_reads_back_whole_in_one_query(
    store: DynamoStore, calls: list[str]
) -> None:
    answer = _answer(b'data: {"a":1}\n\ndata: [DONE]\n\n', stream=True)

    await store.put_answer("abc", answer, LATER)
    calls.clear()
    got = await store.get_answer("abc", NOW + 1)

    assert got == answer
    assert calls == ["Query"]


async def test_an_absent_answer_is_none(store: DynamoStore) -> None:
    assert await store.get_answer("nothing", NOW) is None


async def test_an_expired_answer_is_not_served_before_ttl_deletes_it(store: DynamoStore) -> None:
    await store.put_answer("old", _answer(b"{}"), NOW + 10)

    assert await store.get_answer("old", NOW + 9) is not None
    assert await store.get_answer("old", NOW + 10) is None


async def test_items_are_compressed_and_carry_the_ttl(
    store: DynamoStore, dynamo_client: Any, table_name: str, table_schema: TableSchema
) -> None:
    body = b'{"text":"' + b"the same words again " * 2000 + b'"}'
    await store.put_answer("zip", _answer(body), LATER)

    items = await _items(dynamo_client, table_name, table_schema, "zip")

    assert len(items) == 1
    assert len(base64.b64decode(items[0]["body"]["B"])) < len(body) / 10
    assert float(items[0][table_schema.ttl]["N"]) == LATER


async def test_a_big_answer_is_split_over_parts_and_read_by_one_query(
    store: DynamoStore,
    dynamo_client: Any,
    table_name: str,
    table_schema: TableSchema,
    calls: list[str],
) -> None:
    body = os.urandom(PART_BYTES * 2)  # incompressible: three parts
    answer = _answer(body)

    await store.put_answer("big", answer, LATER)
    calls.clear()
    got = await store.get_answer("big", NOW)

    assert got == answer
    assert calls == ["Query"]
    assert len(await _items(dynamo_client, table_name, table_schema, "big")) == 3


async def test_an_answer_past_the_maximum_is_refused_and_nothing_written(
    store: DynamoStore, dynamo_client: Any, table_name: str, table_schema: TableSchema
) -> None:
    with pytest.raises(AnswerTooLarge):
        await store.put_answer("huge", _answer(os.urandom(MAX_STORED_BYTES + 1)), LATER)

    assert await _items(dynamo_client, table_name, table_schema, "huge") == []


async def test_a_smaller_answer_replaces_a_bigger_one_its_stale_parts_ignored(
    store: DynamoStore,
) -> None:
    await store.put_answer("k", _answer(os.urandom(PART_BYTES * 2)), LATER)
    small = _answer(b'{"ok":true}')

    await store.put_answer("k", small, LATER)

    assert await store.get_answer("k", NOW) == small


async def test_a_torn_answer_is_a_miss_not_a_mix(
    store: DynamoStore, dynamo_client: Any, table_name: str, table_schema: TableSchema
) -> None:
    await store.put_answer("t", _answer(os.urandom(PART_BYTES * 2)), LATER)
    # Another writer's part 1 (a different version) lands beside this one's part 0.
    key = {
        table_schema.pk: {"S": answer_partition("t")},
        table_schema.sk: {"S": part_key(1)},
    }
    await dynamo_client.update_item(
        TableName=table_name,
        Key=key,
        UpdateExpression="SET version = :v",
        ExpressionAttributeValues={":v": {"S": "another"}},
    )

    assert await store.get_answer("t", NOW) is None


async def _items(client: Any, table: str, schema: TableSchema, digest: str) -> list[dict[str, Any]]:
    response = await client.query(
        TableName=table,
        KeyConditionExpression="#pk = :pk",
        ExpressionAttributeNames={"#pk": schema.pk},
        ExpressionAttributeValues={":pk": {"S": answer_partition(digest)}},
    )
    items: list[dict[str, Any]] = response["Items"]
    return items
