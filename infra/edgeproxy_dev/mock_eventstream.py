"""A small encoder for the AWS event-stream framing (``application/vnd.amazon.eventstream``).

One message on the wire:

    total length   uint32   the whole message, these 4 bytes and the final CRC included
    headers length uint32
    prelude CRC    uint32   CRC32 of the 8 bytes above
    headers        name length (uint8), name, value type (uint8, 7 = string),
                   value length (uint16), value; repeated
    payload        bytes (JSON for Bedrock's events)
    message CRC    uint32   CRC32 of everything before it

All integers are big-endian. Written from the format's description for the
mock Bedrock upstream; botocore's ``EventStreamBuffer`` is what reads it
(``tests/unit/dev/test_eventstream.py`` checks the two agree).
"""

from __future__ import annotations

import json
import struct
import zlib
from typing import Any

_STRING = 7


def _crc(data: bytes) -> int:
    return zlib.crc32(data) & 0xFFFFFFFF


def encode_headers(headers: dict[str, str]) -> bytes:
    """The header block: every value a string."""
    out = bytearray()
    for name, value in headers.items():
        raw_name, raw_value = name.encode(), value.encode()
        out += struct.pack(">B", len(raw_name)) + raw_name
        out += struct.pack(">BH", _STRING, len(raw_value)) + raw_value
    return bytes(out)


def encode_message(headers: dict[str, str], payload: bytes) -> bytes:
    """One framed message."""
    header_block = encode_headers(headers)
    total = 12 + len(header_block) + len(payload) + 4
    prelude = struct.pack(">II", total, len(header_block))
    head = prelude + struct.pack(">I", _crc(prelude)) + header_block + payload
    return head + struct.pack(">I", _crc(head))


def event(event_type: str, body: dict[str, Any]) -> bytes:
    """An ``event`` message: ``:event-type`` names the member (``contentBlockDelta``)."""
    headers = {
        ":event-type": event_type,
        ":content-type": "application/json",
        ":message-type": "event",
    }
    return encode_message(headers, json.dumps(body).encode())


def exception(exception_type: str, message: str) -> bytes:
    """An ``exception`` message (``throttlingException``), as a stream's failure."""
    headers = {
        ":exception-type": exception_type,
        ":content-type": "application/json",
        ":message-type": "exception",
    }
    return encode_message(headers, json.dumps({"message": message}).encode())


def corrupt(frame: bytes) -> bytes:
    """``frame`` with its message CRC broken: a reader must refuse it."""
    return frame[:-4] + struct.pack(">I", (_crc(frame[:-4]) + 1) & 0xFFFFFFFF)
