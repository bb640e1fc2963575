"""The embedded DynamoDB's HTTP front end: kept-alive connections, one request at a time,
a long batch in parts with other connections' calls between them."""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import time
import zlib
from collections.abc import Callable, Iterable
from typing import Any

import pytest

from edgeproxy_dev import dynamo_batches
from edgeproxy_dev.dynamo_front import serve


def _echo(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
    body = environ["wsgi.input"].read(int(environ["CONTENT_LENGTH"]))
    target = environ.get("HTTP_X_AMZ_TARGET", "")
    start_response("200 OK", [("Content-Type", "text/plain"), ("Server", "moto")])
    return [target.encode(), b":", body]


async def _exchange(port: int, requests: list[bytes]) -> list[bytes]:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    answers = []
    try:
        for request in requests:
            writer.write(request)
            head = await reader.readuntil(b"\r\n\r\n")
            length = next(
                int(line.split(b":")[1])
                for line in head.split(b"\r\n")
                if line.lower().startswith(b"content-length")
            )
            answers.append(head + await reader.readexactly(length))
        answers.append(await reader.read())  # b"" once the server closed the connection
    finally:
        writer.close()
    return answers


def _post(body: bytes, *headers: str) -> bytes:
    head = ["POST / HTTP/1.1", "Host: x", f"Content-Length: {len(body)}", *headers]
    return ("\r\n".join(head) + "\r\n\r\n").encode() + body


async def test_one_connection_carries_many_requests_until_the_client_says_close() -> None:
    front = await serve(_echo)
    try:
        answers = await _exchange(
            front.port,
            [
                _post(b"one", "X-Amz-Target: A"),
                _post(b"two", "X-Amz-Target: B"),
                _post(b"three", "Connection: close"),
            ],
        )
    finally:
        await front.close()
    assert answers[0].endswith(b"A:one")
    assert answers[1].endswith(b"B:two")
    assert b"Connection: close" in answers[2]
    assert answers[3] == b""  # closed after the third
    assert b"Connection: close" not in answers[0]
    assert answers[0].count(b"Server:") == 0  # the app's Server header is dropped


async def test_a_chunked_request_is_refused_with_411() -> None:
    front = await serve(_echo)
    try:
        request = b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
        answers = await _exchange(front.port, [request])
    finally:
        await front.close()
    assert answers[0].startswith(b"HTTP/1.1 411")


async def test_close_ends_idle_kept_alive_connections() -> None:
    front = await serve(_echo)
    reader, writer = await asyncio.open_connection("127.0.0.1", front.port)
    writer.write(_post(b"x"))
    await reader.readuntil(b":x")
    await front.close()
    assert await asyncio.wait_for(reader.read(), 5) == b""
    writer.close()


BATCH_TARGET = "X-Amz-Target: DynamoDB_20120810.BatchWriteItem"


def _batch(count: int) -> bytes:
    puts = [{"PutRequest": {"Item": {"pk": {"S": f"k{i}"}}}} for i in range(count)]
    return json.dumps({"RequestItems": {"t": puts}}).encode()


def _blocking_exchange(sock: socket.socket, request: bytes) -> bytes:
    sock.sendall(request)
    data = b""
    while b"\r\n\r\n" not in data:
        data += sock.recv(65536)
    head, _, body = data.partition(b"\r\n\r\n")
    length = next(
        int(line.split(b":")[1])
        for line in head.split(b"\r\n")
        if line.lower().startswith(b"content-length")
    )
    while len(body) < length:
        body += sock.recv(65536)
    return body


async def test_a_read_from_another_connection_is_served_between_the_parts_of_a_long_batch(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(dynamo_batches, "TURN_S", 0.05)  # a wide turn: the read is surely in
    served: list[tuple[str, int]] = []
    first_part = threading.Event()

    def app(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        body = json.loads(environ["wsgi.input"].read(int(environ["CONTENT_LENGTH"])))
        operation = environ["HTTP_X_AMZ_TARGET"].rsplit(".", 1)[-1]
        served.append((operation, len(body.get("RequestItems", {}).get("t", []))))
        if operation == "BatchWriteItem" and not first_part.is_set():
            first_part.set()
            time.sleep(0.2)  # the other connection's read arrives while this part is served
        start_response("200 OK", [("Content-Type", "application/x-amz-json-1.0")])
        return [b'{"UnprocessedItems": {"t": []}}' if operation == "BatchWriteItem" else b"{}"]

    front = await serve(app)
    try:
        other = socket.create_connection(("127.0.0.1", front.port))

        def read_meanwhile() -> bytes:
            assert first_part.wait(5)
            return _blocking_exchange(
                other, _post(b'{"TableName": "t"}', "X-Amz-Target: x.GetItem")
            )

        meanwhile = asyncio.create_task(asyncio.to_thread(read_meanwhile))
        answers = await _exchange(
            front.port, [_post(_batch(12), BATCH_TARGET, "Connection: close")]
        )
        assert await meanwhile == b"{}"
        other.close()
    finally:
        await front.close()
    assert served == [
        ("BatchWriteItem", 5),
        ("GetItem", 0),
        ("BatchWriteItem", 5),
        ("BatchWriteItem", 2),
    ]
    head, _, body = answers[0].partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200")
    assert json.loads(body) == {"UnprocessedItems": {"t": []}}
    crc = next(line for line in head.split(b"\r\n") if line.lower().startswith(b"x-amz-crc32"))
    assert int(crc.split(b":")[1]) == zlib.crc32(body)  # botocore checks it


def test_only_a_long_plain_batch_is_split() -> None:
    assert dynamo_batches.parts(dynamo_batches.BATCH_WRITE, _batch(5)) is None  # one part anyway
    assert dynamo_batches.parts("DynamoDB_20120810.PutItem", _batch(12)) is None
    asked = json.dumps({**json.loads(_batch(12)), "ReturnConsumedCapacity": "TOTAL"}).encode()
    assert (
        dynamo_batches.parts(dynamo_batches.BATCH_WRITE, asked) is None
    )  # answers we do not merge
    assert dynamo_batches.parts(dynamo_batches.BATCH_WRITE, b"not json") is None  # moto answers it
    split = dynamo_batches.parts(dynamo_batches.BATCH_WRITE, _batch(11))
    assert split is not None
    keys = [
        w["PutRequest"]["Item"]["pk"]["S"]
        for p in split
        for w in json.loads(p)["RequestItems"]["t"]
    ]
    assert keys == [f"k{i}" for i in range(11)]  # every item once, in the batch's order
    assert [len(json.loads(p)["RequestItems"]["t"]) for p in split] == [5, 5, 1]


def test_the_first_error_among_the_parts_is_the_answer() -> None:
    ok = ("200 OK", [("x-amz-crc32", "1")], b'{"UnprocessedItems": {"t": [{"PutRequest": {}}]}}')
    bad = ("400 Bad Request", [], b'{"__type": "ValidationException"}')
    assert dynamo_batches.joined([ok, bad, ok]) == bad
    status, headers, body = dynamo_batches.joined([ok, ok])
    assert status == "200 OK"
    assert json.loads(body) == {"UnprocessedItems": {"t": [{"PutRequest": {}}, {"PutRequest": {}}]}}
    assert headers == [("x-amz-crc32", str(zlib.crc32(body)))]
