"""A BatchWriteItem served in parts, so that other callers' calls run between them.

The front end serves one call at a time (``dynamo_front``), and moto takes
about 0.5 ms per item of a batch: a 25-item batch of the request log held
every request's read behind it for 15-25 ms on a loaded machine, the
one-client tail. DynamoDB never makes a read wait for another caller's
batch: a batch is not atomic (each item's write is, on its own), and its
items land one by one. Serving a long batch as parts of ``PART`` items, with
a turn for the other connections between parts, keeps that: every item's
write is still atomic and applied in the batch's order, and a read between
two parts sees the first ones, as it could on DynamoDB.

What differs: moto checks each part on its own, so a batch with an invalid
item in a later part has its earlier parts written before the error is
answered (DynamoDB refuses such a batch whole). The gateway's request log
then writes the batch again one record at a time (``LogBuffer``), and a put
written twice is the same item.
"""

from __future__ import annotations

import json
import zlib
from typing import Any

BATCH_WRITE = "DynamoDB_20120810.BatchWriteItem"
PART = 5  # items per part: about one read's time in moto, and 5x fewer extra calls than 1
TURN_S = 0.0005  # a part waits this long for the loop to serve calls that came meanwhile
_REQUESTS = ("PutRequest", "DeleteRequest")

Answer = tuple[str, list[tuple[str, str]], bytes]


def parts(target: str, body: bytes) -> list[bytes] | None:
    """The bodies of ``body``'s parts, in order; None: serve it whole.

    Only a plain batch is split: every entry a put or a delete, more than
    ``PART`` of them, nothing asked back but the unprocessed items.
    """
    if target != BATCH_WRITE:
        return None
    try:
        request = json.loads(body)
    except ValueError:
        return None
    if not isinstance(request, dict) or set(request) != {"RequestItems"}:
        return None
    tables = request["RequestItems"]
    if not isinstance(tables, dict):
        return None
    entries: list[tuple[str, Any]] = []
    for table, writes in tables.items():
        if not isinstance(writes, list):
            return None
        for write in writes:
            if not isinstance(write, dict) or len(write) != 1 or next(iter(write)) not in _REQUESTS:
                return None
            entries.append((table, write))
    if len(entries) <= PART:
        return None
    out = []
    for start in range(0, len(entries), PART):
        grouped: dict[str, list[Any]] = {}
        for table, write in entries[start : start + PART]:
            grouped.setdefault(table, []).append(write)
        out.append(json.dumps({"RequestItems": grouped}).encode())
    return out


def joined(answers: list[Answer]) -> Answer:
    """One answer for the parts' answers: the first error, or their unprocessed items merged."""
    for answer in answers:
        if not answer[0].startswith("200"):
            return answer
    unprocessed: dict[str, list[Any]] = {}
    for _status, _headers, body in answers:
        for table, writes in json.loads(body or b"{}").get("UnprocessedItems", {}).items():
            unprocessed.setdefault(table, []).extend(writes)
    status, headers, _ = answers[0]
    body = json.dumps({"UnprocessedItems": unprocessed}).encode()
    kept = [(n, v) for n, v in headers if n.lower() != "x-amz-crc32"]
    return status, [*kept, ("x-amz-crc32", str(zlib.crc32(body)))], body
