"""Capacity units per call: eventually consistent reads cost half, every key counts."""

from __future__ import annotations

import json

from bench.units import capacity_units


def batch(keys: int, consistent: bool) -> bytes:
    wanted = [{"pk": {"S": f"k{i}"}, "sk": {"S": "s"}} for i in range(keys)]
    return json.dumps(
        {"RequestItems": {"t": {"Keys": wanted, "ConsistentRead": consistent}}}
    ).encode()


def test_reads_cost_one_unit_per_key_or_half_when_eventually_consistent() -> None:
    assert capacity_units("BatchGetItem", batch(12, consistent=True)) == (12.0, 0.0)
    assert capacity_units("BatchGetItem", batch(12, consistent=False)) == (6.0, 0.0)
    assert capacity_units("GetItem", b'{"ConsistentRead": true}') == (1.0, 0.0)


def test_writes_cost_one_unit_and_a_transaction_twice_its_items() -> None:
    assert capacity_units("UpdateItem", b"{}") == (0.0, 1.0)
    assert capacity_units("TransactWriteItems", b'{"TransactItems": [{}, {}]}') == (0.0, 4.0)


def test_a_batch_write_costs_one_unit_per_item() -> None:
    put = {"PutRequest": {"Item": {"pk": {"S": "log#1"}, "sk": {"S": "x"}}}}
    body = json.dumps({"RequestItems": {"t": [put] * 7}}).encode()
    assert capacity_units("BatchWriteItem", body) == (0.0, 7.0)
