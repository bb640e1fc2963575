"""Upstream bounds and secrets: a linear SSE parser with caps, every error field scrubbed."""

from __future__ import annotations

import json
import time

import pytest

from edgeproxy.errors import UpstreamFault
from edgeproxy.routing.faults import FaultKind
from edgeproxy.routing.verdict import judge
from edgeproxy.upstream.errors import hide_secrets, http_fault, stream_error_fault
from edgeproxy.upstream.sse import SSEParser

CREDENTIAL = "deployment-credential-0123456789"


def test_a_long_line_without_a_newline_costs_linear_time() -> None:
    # The old parser rescanned its buffer on every read: 4 MiB in 4 KiB reads took ~20 s.
    parser = SSEParser(max_event_bytes=8 * 1024 * 1024)
    piece = b"x" * 4096
    started = time.process_time()
    assert parser.feed(b"data: ") == []
    for _ in range(1024):
        assert parser.feed(piece) == []
    events = parser.feed(b"\n\n")
    assert time.process_time() - started < 1.0
    assert len(events) == 1
    assert len(events[0].data) == 4 * 1024 * 1024


def test_lines_split_anywhere_still_parse() -> None:
    parser = SSEParser()
    raw = b'data: {"a":\r\ndata: 1}\r\n\r\ndata: two\rdata: lines\r\r: c\n\n'
    events = [e for i in range(len(raw)) for e in parser.feed(raw[i : i + 1])]
    assert [e.data for e in events] == ['{"a":\n1}', "two\nlines"]
    assert parser.comments == 1


def oversize(parser: SSEParser, *chunks: bytes) -> UpstreamFault:
    for chunk in chunks[:-1]:
        parser.feed(chunk)
    with pytest.raises(UpstreamFault) as caught:
        parser.feed(chunks[-1])
    return caught.value


def test_a_line_longer_than_the_event_cap_is_an_oversize_transient_failure() -> None:
    exc = oversize(SSEParser(max_event_bytes=1000), b"data: ", b"x" * 600, b"x" * 600)
    assert exc.fault.kind is FaultKind.OVERSIZE
    assert "gateway.upstream_limits.event_bytes" in exc.fault.message
    verdict = judge(exc.fault)
    assert verdict.tries_another
    assert verdict.lowers_health


def test_data_lines_without_a_blank_line_are_capped_as_one_event() -> None:
    parser = SSEParser(max_event_bytes=10_000)
    line = b"data: " + b"y" * 99 + b"\n"
    exc = oversize(parser, *([line] * 100))  # the 100th line passes 10,000 bytes
    assert exc.fault.kind is FaultKind.OVERSIZE
    # Separate events of the same total size are fine.
    ok = SSEParser(max_event_bytes=10_000)
    assert len([e for _ in range(200) for e in ok.feed(line + b"\n")]) == 200


def hostile_error() -> bytes:
    return json.dumps(
        {
            "error": {
                "message": f"bad key {CREDENTIAL}, also sk-proj-abcdef123456 and ep-abc123def",
                "type": f"auth_{CREDENTIAL}",
                "code": "Bearer eyJhbGciOi.secret.token",
                "param": f"api_key={CREDENTIAL}",
            }
        }
    ).encode()


def test_every_field_of_an_upstream_error_is_scrubbed() -> None:
    fault = http_fault(401, hostile_error(), retry_after=None, secrets=[CREDENTIAL]).fault
    fields = [fault.message, fault.type, fault.code, fault.param]
    text = " ".join(str(f) for f in fields)
    for leaked in (CREDENTIAL, "sk-proj-abcdef", "ep-abc123", "eyJhbGciOi"):
        assert leaked not in text, fields
    assert all(f and "[redacted]" in f for f in fields), fields


def test_an_in_band_stream_error_is_scrubbed_the_same_way() -> None:
    payload = json.loads(hostile_error())
    fault = stream_error_fault(payload, [CREDENTIAL]).fault
    assert CREDENTIAL not in f"{fault.message} {fault.type} {fault.code} {fault.param}"


def test_an_answer_echoing_the_credential_is_scrubbed_but_other_text_is_kept() -> None:
    answer = {
        "choices": [{"message": {"content": f'{{"authorization": "Bearer {CREDENTIAL}"}}'}}],
        CREDENTIAL: ["sk-sample-in-a-code-example"],
    }
    clean = hide_secrets(answer, [CREDENTIAL, None])
    assert CREDENTIAL not in json.dumps(clean)
    assert clean["[redacted]"] == ["sk-sample-in-a-code-example"]
    assert hide_secrets(answer, [None]) is answer
