"""The mock's event-stream encoder, read back by botocore's own parser (the reference)."""

from __future__ import annotations

import json

import pytest
from botocore.eventstream import ChecksumMismatch, EventStreamBuffer

from edgeproxy_dev import mock_eventstream as eventstream


def test_botocore_reads_what_the_encoder_writes_even_in_pieces() -> None:
    frames = [
        eventstream.event("messageStart", {"role": "assistant"}),
        eventstream.event("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"text": "hé"}}),
        eventstream.exception("throttlingException", "slow down"),
    ]
    wire = b"".join(frames)
    buffer = EventStreamBuffer()
    messages = []
    for start in range(0, len(wire), 7):  # arbitrary network reads
        buffer.add_data(wire[start : start + 7])
        messages.extend(buffer)
    assert [m.headers for m in messages] == [
        {
            ":event-type": "messageStart",
            ":content-type": "application/json",
            ":message-type": "event",
        },
        {
            ":event-type": "contentBlockDelta",
            ":content-type": "application/json",
            ":message-type": "event",
        },
        {
            ":exception-type": "throttlingException",
            ":content-type": "application/json",
            ":message-type": "exception",
        },
    ]
    assert json.loads(messages[1].payload) == {"contentBlockIndex": 0, "delta": {"text": "hé"}}
    assert messages[2].to_response_dict()["status_code"] == 400  # an exception, for botocore


def test_a_corrupt_frame_is_refused() -> None:
    buffer = EventStreamBuffer()
    buffer.add_data(
        eventstream.corrupt(eventstream.event("messageStop", {"stopReason": "end_turn"}))
    )
    with pytest.raises(ChecksumMismatch):
        next(buffer)
