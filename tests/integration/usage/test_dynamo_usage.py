"""``DynamoUsageLog`` on the embedded DynamoDB: records, aggregates, TTL, call counts."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest

from edgeproxy.service.usage.report import ReportQuery, usage_report
from edgeproxy.state import usage_log as layout
from edgeproxy.state.dynamodb.dynamo import DynamoStore
from edgeproxy.state.dynamodb.dynamo_usage import DynamoUsageLog
from edgeproxy.state.usage_log import RequestRecord, UsageRow

NOW = 1_796_000_000.0
HOUR = int(NOW // 3600)


@pytest.fixture
def log(store: DynamoStore) -> DynamoUsageLog:
    return DynamoUsageLog.sharing(store)


@pytest.fixture
def calls(dynamo_client: Any) -> list[str]:
    seen: list[str] = []
    dynamo_client.hooks.append(lambda operation, _answer: seen.append(operation))
    return seen


def record(i: int, **fields: Any) -> RequestRecord:
    values: dict[str, Any] = {
        "at": NOW + i,
        "request_id": f"req{i:03d}",
        "model": "fast-chat",
        "operation": "chat",
        "stream": False,
        "status": 200,
        "outcome": "success",
        "expires_at": NOW + 86400,
        **fields,
    }
    return RequestRecord(**values)


async def test_a_record_comes_back_field_for_field(log: DynamoUsageLog, calls: list[str]) -> None:
    full = record(
        1,
        key_id="k1",
        key_name="billing",
        served_model="fast-chat",
        deployment="b",
        tried=("a", "b"),
        failure_class=None,
        attempts=2,
        continued=True,
        prompt_tokens=10,
        completion_tokens=6,
        cost_usd=5.1e-06,
        latency_ms=477,
        upstream_ms=266,
        added_ms=135,
        ttft_ms=475,
        prompt="hi",
        answer="hello",
        stream=True,
    )
    await log.put_requests([full])
    assert calls == ["PutItem"]
    assert await log.read_requests(HOUR, 10, NOW) == [full]


async def test_many_records_go_25_to_a_batch_and_read_back_newest_first(
    log: DynamoUsageLog, calls: list[str]
) -> None:
    await log.put_requests([record(i) for i in range(60)])
    assert calls == ["BatchWriteItem"] * 3
    found = await log.read_requests(HOUR, 50, NOW)
    assert [r.request_id for r in found] == [f"req{i:03d}" for i in range(59, 9, -1)]


async def test_expired_records_and_aggregates_are_not_read(log: DynamoUsageLog) -> None:
    await log.put_requests([record(1, expires_at=NOW - 1), record(2)])
    assert [r.request_id for r in await log.read_requests(HOUR, 10, NOW)] == ["req002"]
    await log.add_usage(UsageRow(HOUR, "k", "m", "d", requests=1), NOW - 1)
    assert await log.read_usage_rows(HOUR, HOUR, NOW) == []


async def test_aggregates_add_up_exactly_and_keep_names_apart(log: DynamoUsageLog) -> None:
    for _ in range(10):
        await log.add_usage(
            UsageRow(HOUR, "k1", "m#1", "d", "billing", 1, 0, 2, 3, Decimal("0.1")), NOW + 9e5
        )
    await log.add_usage(UsageRow(HOUR, "k1", "m", "1#d", "billing", 1, 1), NOW + 9e5)
    await log.add_usage(UsageRow(HOUR + 30, "k1", "m", "d", "renamed", 1), NOW + 9e5)
    rows = {r.bucket: r for r in await log.read_usage_rows(HOUR, HOUR + 30, NOW)}
    assert set(rows) == {
        (HOUR, "k1", "m#1", "d", ()),
        (HOUR, "k1", "m", "1#d", ()),
        (HOUR + 30, "k1", "m", "d", ()),
    }
    summed = rows[(HOUR, "k1", "m#1", "d", ())]
    assert (summed.requests, summed.prompt_tokens, summed.completion_tokens) == (10, 20, 30)
    assert summed.cost_usd == Decimal("1.0")  # DynamoDB's decimal sum: no float drift
    assert rows[(HOUR + 30, "k1", "m", "d", ())].key_name == "renamed"
    # A range reads only its hours (across days: one query per day).
    assert {r.hour for r in await log.read_usage_rows(HOUR + 1, HOUR + 30, NOW)} == {HOUR + 30}


async def test_labels_are_dimensions_of_the_aggregates_and_filters_of_the_log(
    log: DynamoUsageLog,
) -> None:
    team_a = layout.labels_of(("a", "acme"))
    for labels, requests in ((team_a, 1), (team_a, 2), (layout.labels_of(("b#1", "acme")), 4)):
        row = UsageRow(HOUR, "k1", "m", "d", "billing", requests, labels=labels)
        await log.add_usage(row, NOW + 9e5)
    await log.add_usage(UsageRow(HOUR, "k1", "m", "d", "billing", 8), NOW + 9e5)  # no team
    rows = {r.bucket: r.requests for r in await log.read_usage_rows(HOUR, HOUR, NOW)}
    assert rows == {
        (HOUR, "k1", "m", "d", (("team", "a"), ("organization", "acme"))): 3,
        (HOUR, "k1", "m", "d", (("team", "b#1"), ("organization", "acme"))): 4,
        (HOUR, "k1", "m", "d", ()): 8,  # the same bucket as before labels existed
    }
    await log.put_requests(
        [
            record(i, key_id="k1", team=team, organization=org)
            for i, (team, org) in enumerate(
                [("a", "acme"), ("b", "acme"), (None, None), ("a", "acme"), ("c", "globex")] * 12
            )
        ]
    )
    mine = await log.read_requests(HOUR, 1000, NOW, ("team", "a"))
    assert len(mine) == 24
    assert {(r.team, r.organization) for r in mine} == {("a", "acme")}
    newest = await log.read_requests(HOUR, 5, NOW, ("organization", "acme"))
    assert [r.request_id for r in newest] == ["req058", "req056", "req055", "req053", "req051"]
    assert await log.read_requests(HOUR, 5, NOW, ("team", "z")) == []
    with pytest.raises(ValueError, match="no label"):
        await log.read_requests(HOUR, 5, NOW, ("key_id", "k1"))


async def test_records_and_aggregates_spread_over_every_shard_are_all_read_back(
    log: DynamoUsageLog, store: DynamoStore
) -> None:
    records = [record(i) for i in range(300)]
    await log.put_requests(records)
    for _ in range(64):
        await log.add_usage(UsageRow(HOUR, "k1", "m", "d", "billing", 1, 0, 2, 3), NOW + 9e5)
    # The writes really are spread: every shard's partition holds some of both.
    table = store._table
    for shard in range(layout.LOG_SHARDS):
        logged = await table.call(
            "query",
            KeyConditionExpression="#pk = :pk",
            ExpressionAttributeNames={"#pk": store._schema.pk},
            ExpressionAttributeValues={":pk": {"S": layout.log_partition(HOUR, shard)}},
            Select="COUNT",
        )
        assert logged["Count"] > 0, f"log shard {shard} is empty"
    day = HOUR * 3600 // 86400
    used = set()
    for shard in range(layout.LOG_SHARDS):
        found = await table.call(
            "query",
            KeyConditionExpression="#pk = :pk",
            ExpressionAttributeNames={"#pk": store._schema.pk},
            ExpressionAttributeValues={":pk": {"S": layout.usage_partition(day, shard)}},
            Select="COUNT",
        )
        if found["Count"]:
            used.add(shard)
    assert len(used) > 4  # 64 increments over 32 shards: many of them hold a part
    # ... and the readers read every shard back whole.
    newest = await log.read_requests(HOUR, 1000, NOW)
    assert [r.request_id for r in newest] == [f"req{i:03d}" for i in range(299, -1, -1)]
    assert [r.request_id for r in await log.read_requests(HOUR, 7, NOW)] == [
        f"req{i:03d}" for i in range(299, 292, -1)
    ]
    [row] = await log.read_usage_rows(HOUR, HOUR, NOW)
    assert (row.requests, row.prompt_tokens, row.completion_tokens) == (64, 128, 192)
    report = await usage_report(log, ReportQuery(HOUR, HOUR, ("key",), "hour"), NOW)
    assert report["totals"]["requests"] == 64
