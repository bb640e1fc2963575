"""Hostile upstream behaviours of the mock: answers a gateway must bound or refuse.

    {"huge_json_bytes": 209715200}   a valid JSON answer of that many bytes (Content-Length)
    {"endless_json": true}           a chunked JSON answer that never ends
    {"long_line_bytes": 4194304}     a stream whose first line has that many bytes, no newline
    {"data_lines_bytes": 67108864}   ``data:`` lines of that many bytes in all, no blank line
    {"endless_stream": true}         valid chunks forever (never [DONE]; each delta is "content", if given)
    {"trickle": true}                a JSON answer's headers, then one byte a second, never ending
    {"nan": true}                    NaN in the JSON answer / in the first stream chunk
    {"echo_headers": true}           the answer's content is the request's headers (key included)

Everything is written in 64 KiB pieces, so the mock itself stays small
whatever it claims to send; endless answers stop when the client hangs up.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json

from edgeproxy_dev import mock_answers as answers
from edgeproxy_dev import mock_http as http
from edgeproxy_dev.mock_faults import MockFault

_PIECE = 64 * 1024
_NAN_CHUNK = (
    b'data: {"id":"chatcmpl-nan","object":"chat.completion.chunk","created":1,"model":"m",'
    b'"choices":[{"index":0,"delta":{"content":"hi"},"logprobs":NaN,"finish_reason":null}]}\n\n'
)


def is_hostile(fault: MockFault) -> bool:
    """Whether ``fault`` asks for one of this module's answers (besides NaN and echo)."""
    return bool(
        fault.huge_json_bytes
        or fault.endless_json
        or fault.long_line_bytes
        or fault.data_lines_bytes
        or fault.endless_stream
        or fault.trickle
    )


async def answer(
    fault: MockFault, writer: asyncio.StreamWriter, reader: asyncio.StreamReader
) -> bool:
    """Write the hostile answer ``fault`` names; ``False``: the connection is done."""
    try:
        if fault.huge_json_bytes:
            await _huge_json(writer, fault.huge_json_bytes)
            return True
        if fault.trickle:
            await http.start_chunked(writer, {"content-type": "application/json"})
            while True:
                await http.write_chunk(writer, b" ")
                await asyncio.sleep(1.0)
        if fault.endless_json:
            await http.start_chunked(writer, {"content-type": "application/json"})
            await http.write_chunk(writer, b'{"id": "endless", "pad": "')
            while True:
                await http.write_chunk(writer, b"a" * _PIECE)
        await http.start_chunked(writer, {})
        if fault.long_line_bytes:
            await _repeat(writer, b"data: ", b"x", fault.long_line_bytes)
        elif fault.data_lines_bytes:
            await _repeat(writer, b"", b"data: " + b"y" * 1000 + b"\n", fault.data_lines_bytes)
        else:
            chunk = _chunk(fault.content or "z" * 1000)
            while True:
                await http.write_chunk(writer, chunk * 32)
        await http.wait_for_close(reader)
    except ConnectionError:
        pass  # the gateway hung up: what these answers are for
    return False


def nan_json(fault: MockFault, anthropic: bool, args: answers.Args) -> bytes | None:
    """The raw JSON answer body ``fault`` asks for (NaN in it, or unparseable), if any."""
    if fault.malformed_after_chunks is not None:
        return b"{not json"
    if not fault.nan:
        return None
    build = answers.anthropic_message if anthropic else answers.chat_completion
    return json.dumps({**build(*args), "nan_score": float("nan")}).encode()


def nan_frames(frames: list[bytes]) -> list[bytes]:
    """A stream whose first chunk carries NaN."""
    return [_NAN_CHUNK, *frames]


def echoing(fault: MockFault, headers: dict[str, str]) -> MockFault:
    """``fault`` answering with the request's headers as its text, if it asks to echo."""
    if not fault.echo_headers:
        return fault
    return dataclasses.replace(fault, content=json.dumps(headers, sort_keys=True))


def _chunk(text: str) -> bytes:
    payload = {
        "id": "chatcmpl-endless",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "m",
        "choices": [{"index": 0, "delta": {"content": text}, "finish_reason": None}],
    }
    return b"data: " + json.dumps(payload).encode() + b"\n\n"


async def _huge_json(writer: asyncio.StreamWriter, size: int) -> None:
    head = b'{"id": "huge", "object": "chat.completion", "pad": "'
    tail = b'", "choices": []}'
    pad = max(0, size - len(head) - len(tail))
    headers = {
        "content-type": "application/json",
        "content-length": str(len(head) + pad + len(tail)),
    }
    writer.write(http.response_head(200, headers) + head)
    while pad > 0:
        step = min(pad, _PIECE)
        writer.write(b"a" * step)
        await writer.drain()
        pad -= step
    writer.write(tail)
    await writer.drain()


async def _repeat(writer: asyncio.StreamWriter, first: bytes, piece: bytes, total: int) -> None:
    await http.write_chunk(writer, first)
    block = piece * max(1, _PIECE // len(piece))
    sent = len(first)
    while sent < total:
        await http.write_chunk(writer, block)
        sent += len(block)
