"""The DynamoDB capacity units a call costs, from its request body.

DynamoDB's pricing: a strongly consistent read costs 1 read unit per 4 KB of
item (rounded up), an eventually consistent read half that, and a key that
finds no item still costs the minimum; a write costs 1 write unit per 1 KB,
failed conditions included. The store's items are small (under 1 KB), so each
key read costs the minimum and each write one unit; a transaction costs
twice its items' units.
"""

from __future__ import annotations

import json

WRITES = frozenset({"PutItem", "UpdateItem", "DeleteItem"})


def capacity_units(operation: str, body: bytes) -> tuple[float, float]:
    """``(read units, write units)`` of one call, for items under 1 KB."""
    if operation in WRITES:
        return 0.0, 1.0
    if operation == "TransactWriteItems":
        return 0.0, 2.0 * len(json.loads(body).get("TransactItems", []))
    if operation == "BatchWriteItem":  # the request log's buffered records: one unit each
        items = json.loads(body).get("RequestItems", {}).values()
        return 0.0, float(sum(len(requests) for requests in items))
    if operation == "BatchGetItem":
        read = 0.0
        for table in json.loads(body).get("RequestItems", {}).values():
            per_key = 1.0 if table.get("ConsistentRead") else 0.5
            read += per_key * len(table.get("Keys", []))
        return read, 0.0
    if operation == "GetItem":
        return (1.0 if json.loads(body).get("ConsistentRead") else 0.5), 0.0
    return 0.0, 0.0  # queries and scans: off the request path, not counted here
