"""What only ``DynamoStore`` promises: request counts, item layout, TTL, error translation.

Calls are observed with the store client's hooks (``DynamoClient.hooks``);
the requests still go to the embedded server.
"""

from __future__ import annotations

import random
import socket
from typing import Any

import aioboto3
import pytest

from edgeproxy.errors import StoreError, StoreUnavailable
from edgeproxy.routing.snapshot import Binding, BindingKey, Circuit, CircuitState, Health
from edgeproxy.state import keys
from edgeproxy.state.dynamodb.dynamo import DynamoStore
from edgeproxy.state.dynamodb.schema import TableSchema
from edgeproxy.state.store import SnapshotRequest, UsageDelta
from edgeproxy_dev.dynamo_server import client_kwargs
from tests.fixtures.dynamo import open_client

NOW = 1_700_000_000.0
MINUTE = int(NOW // 60)
LATER = NOW + 3600
KEY = BindingKey(caller="c", pool="p", protocol="chat")


@pytest.fixture
def calls(dynamo_client: Any) -> list[str]:
    """Names of the API calls the test's client makes, in order."""
    seen: list[str] = []

    def count(operation: str, _answer: dict[str, Any]) -> None:
        seen.append(operation)

    dynamo_client.hooks.append(count)
    return seen


async def _get(client: Any, table: str, schema: TableSchema, key: keys.Key) -> dict[str, Any]:
    response = await client.get_item(
        TableName=table, Key={schema.pk: {"S": key[0]}, schema.sk: {"S": key[1]}}
    )
    item: dict[str, Any] = response.get("Item", {})
    return item


async def test_read_pool_is_one_batch_get(store: DynamoStore, calls: list[str]) -> None:
    request = SnapshotRequest("p", ["d1", "d2", "d3"], ["a", "b"], MINUTE, binding=KEY)

    await store.read_pool(request)

    assert calls == ["BatchGetItem"]


async def test_more_than_100_keys_are_split_and_all_returned(
    store: DynamoStore, calls: list[str]
) -> None:
    deployments = [f"d{i}" for i in range(30)]  # 4 keys each + pool + binding = 122 keys
    for d in deployments:
        assert await store.write_circuit(Circuit(d, failures=1, version=1), 0) is None
    calls.clear()

    snapshot = await store.read_pool(SnapshotRequest("p", deployments, [], MINUTE, binding=KEY))

    assert calls == ["BatchGetItem", "BatchGetItem"]
    assert set(snapshot.circuits) == set(deployments)


async def test_unprocessed_keys_are_requested_again(
    store: DynamoStore, dynamo_client: Any, table_name: str, calls: list[str]
) -> None:
    for d in ("d1", "d2"):
        assert await store.write_circuit(Circuit(d, failures=2, version=1), 0) is None
    held_back: list[str] = []

    def hold_back_one(operation: str, parsed: dict[str, Any]) -> None:
        # Fault injection at the client seam: the server answered, DynamoDB
        # could have left this key unprocessed under load.
        returned = parsed.get("Responses", {}).get(table_name, [])
        if operation == "BatchGetItem" and not held_back and returned:
            item = returned.pop()
            held_back.append(item["pk"]["S"])
            key = {"pk": item["pk"], "sk": item["sk"]}
            parsed["UnprocessedKeys"] = {table_name: {"Keys": [key], "ConsistentRead": True}}

    dynamo_client.hooks.insert(0, hold_back_one)
    calls.clear()

    snapshot = await store.read_pool(SnapshotRequest("p", ["d1", "d2"], [], MINUTE))

    assert held_back
    assert calls == ["BatchGetItem", "BatchGetItem"]
    assert {c.failures for c in snapshot.circuits.values()} == {2}
    assert set(snapshot.circuits) == {"d1", "d2"}


async def test_a_lost_race_costs_no_second_read(store: DynamoStore, calls: list[str]) -> None:
    assert await store.write_circuit(Circuit("d1", state=CircuitState.OPEN, version=1), 0) is None
    calls.clear()

    winner = await store.write_circuit(Circuit("d1", version=1), 0)

    assert winner is not None
    assert winner.state is CircuitState.OPEN
    assert calls == ["PutItem"]


async def test_admit_and_record_are_one_write_each(store: DynamoStore, calls: list[str]) -> None:
    assert await store.admit("d1", MINUTE, 10, LATER)
    await store.record(UsageDelta("d1", MINUTE, inflight=-1, successes=1), LATER)
    await store.record(UsageDelta("d1", MINUTE), LATER)  # nothing to add: no request

    assert calls == ["UpdateItem", "UpdateItem"]


async def test_items_carry_the_ttl_attribute(
    store: DynamoStore, dynamo_client: Any, table_name: str, table_schema: TableSchema
) -> None:
    assert await store.admit("d1", MINUTE, None, LATER)
    await store.put_health(Health("d1", score=0.7), LATER + 1)
    await store.put_binding(Binding(KEY, "d1", expires_at=LATER + 2), None)
    await store.extend_capacity("acct", NOW + 30)

    ttl = table_schema.ttl
    usage = await _get(dynamo_client, table_name, table_schema, keys.usage_key("d1", MINUTE))
    health = await _get(dynamo_client, table_name, table_schema, keys.health_key("d1"))
    binding = await _get(dynamo_client, table_name, table_schema, keys.binding_key(KEY))
    capacity = await _get(dynamo_client, table_name, table_schema, keys.capacity_key("acct"))
    assert float(usage[ttl]["N"]) == LATER
    assert float(health[ttl]["N"]) == LATER + 1
    assert float(binding[ttl]["N"]) == LATER + 2
    assert float(capacity[ttl]["N"]) > NOW + 30  # kept a while after the throttle ends


async def test_circuits_never_expire(
    store: DynamoStore, dynamo_client: Any, table_name: str, table_schema: TableSchema
) -> None:
    assert await store.write_circuit(Circuit("d1", version=1), 0) is None
    item = await _get(dynamo_client, table_name, table_schema, keys.circuit_key("d1"))
    assert item
    assert table_schema.ttl not in item


async def test_a_missing_table_is_a_store_error(
    dynamo_client: Any, table_schema: TableSchema
) -> None:
    store = DynamoStore(dynamo_client, "no-such-table", table_schema, random.Random(0))

    with pytest.raises(StoreError) as caught:
        await store.load_config()

    assert type(caught.value) is StoreError
    assert caught.value.__cause__ is not None


@pytest.fixture
def closed_port() -> int:
    """A loopback port nobody listens on (bound, then released)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


async def test_an_unreachable_endpoint_is_store_unavailable(
    aws_session: aioboto3.Session, closed_port: int, table_schema: TableSchema
) -> None:
    endpoint = f"http://127.0.0.1:{closed_port}"
    session = aioboto3.Session(**{k: v for k, v in client_kwargs(endpoint).items() if "aws_" in k})
    client = await open_client(session, "us-east-1", endpoint, store_connect_timeout_seconds=1)
    try:
        store = DynamoStore(client, "t", table_schema, random.Random(0))
        with pytest.raises(StoreUnavailable):
            await store.load_config()
    finally:
        await client.close()
