"""The SSE parser: line endings, splits anywhere, comments, fields."""

from __future__ import annotations

import pytest

from edgeproxy.upstream.sse import ServerSentEvent, SSEParser

STREAM = (
    b"\xef\xbb\xbf: hello\r\n"
    b"event: message_start\r\n"
    b'data: {"a": 1}\r\n\r\n'
    b"data: line one\n"
    b"data: line two\n\n"
    b"id: 7\rretry: 1500\rdata:no-space\r\r"
    b": keepalive\n\n"
    b"data: caf\xc3\xa9 \xe2\x82\xac\n\n"
)
EXPECTED = [
    ServerSentEvent(data='{"a": 1}', event="message_start"),
    ServerSentEvent(data="line one\nline two"),
    ServerSentEvent(data="no-space", id="7", retry=1500),
    ServerSentEvent(data="caf\u00e9 \u20ac", id="7"),
]


def feed_all(parser: SSEParser, chunks: list[bytes]) -> list[ServerSentEvent]:
    return [event for chunk in chunks for event in parser.feed(chunk)]


def test_whole_stream_at_once() -> None:
    parser = SSEParser()
    assert parser.feed(STREAM) == EXPECTED
    assert parser.comments == 2


@pytest.mark.parametrize("cut", range(1, len(STREAM)))
def test_every_two_way_split_gives_the_same_events(cut: int) -> None:
    assert feed_all(SSEParser(), [STREAM[:cut], STREAM[cut:]]) == EXPECTED


def test_byte_by_byte() -> None:
    assert feed_all(SSEParser(), [bytes([b]) for b in STREAM]) == EXPECTED


def test_crlf_split_between_chunks_is_one_line_ending() -> None:
    parser = SSEParser()
    assert parser.feed(b"data: a\r") == []
    # The LF completes the CRLF; the next CRLF is the blank line that dispatches.
    assert parser.feed(b"\n\r\n") == [ServerSentEvent(data="a")]


def test_lone_cr_then_lf_in_next_chunk_is_not_a_blank_line() -> None:
    parser = SSEParser()
    parser.feed(b"data: a\r")
    assert parser.feed(b"\ndata: b\n\n") == [ServerSentEvent(data="a\nb")]


def test_event_without_data_is_not_dispatched() -> None:
    parser = SSEParser()
    assert parser.feed(b"event: ping\n\n") == []
    # ...and its event name does not leak into the next event.
    assert parser.feed(b"data: x\n\n") == [ServerSentEvent(data="x")]


def test_unfinished_event_is_held_until_its_blank_line() -> None:
    parser = SSEParser()
    assert parser.feed(b"data: partial") == []
    assert parser.feed(b"\n") == []
    assert parser.feed(b"\n") == [ServerSentEvent(data="partial")]


def test_field_rules() -> None:
    parser = SSEParser()
    events = parser.feed(
        b"data\n"  # a bare field name is an empty value
        b"data:  two spaces\n"  # only one leading space is removed
        b"unknown: ignored\n"
        b"retry: soon\n"  # not digits: ignored
        b"\n"
    )
    assert events == [ServerSentEvent(data="\n two spaces")]


def test_done_marker_is_plain_data() -> None:
    assert SSEParser().feed(b"data: [DONE]\n\n") == [ServerSentEvent(data="[DONE]")]


def test_bom_only_stripped_at_stream_start() -> None:
    parser = SSEParser()
    parser.feed(b"data: x\n\n")
    events = parser.feed(b"\xef\xbb\xbfdata: y\n\n")
    assert events == []  # a BOM later on makes the field name unknown
