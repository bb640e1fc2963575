"""An idempotency key's answer: a ``StoredAnswer`` captured from its tee, replayed as sent."""

from __future__ import annotations

import json
import random
import zlib
from typing import Any

from starlette.responses import StreamingResponse

from edgeproxy.api.reply import MAX_REPLY_BYTES, replayed, reply_of
from edgeproxy.api.tee import Tee
from edgeproxy.state.answers import StoredAnswer
from tests.unit.api.test_stored_answers import SSE, _body, _send_through


def _tee(status: int, body: list[bytes], headers: list[tuple[bytes, bytes]]) -> Tee:
    tee = Tee()
    tee.messages.append({"type": "http.response.start", "status": status, "headers": headers})
    for n, part in enumerate(body):
        more = n < len(body) - 1
        tee.messages.append({"type": "http.response.body", "body": part, "more_body": more})
    return tee


HEADERS = [
    (b"content-type", b"text/event-stream"),
    (b"x-request-id", b"first"),
    (b"x-edgeproxy-deployment", b"d1"),
    (b"x-ratelimit-remaining-requests", b"9"),
]


async def test_a_stream_is_kept_as_a_stored_answer_and_replayed_as_the_same_stream() -> None:
    parts = [SSE[:30], SSE[30:]]
    blob = reply_of(_tee(200, parts, HEADERS), stream=True, complete=True)
    assert blob is not None
    answer = StoredAnswer.decoded(blob)  # the cache's own format
    assert (answer.status, answer.stream, answer.body) == (200, True, SSE)
    assert answer.content_type == "text/event-stream"
    assert dict(answer.headers) == {"x-edgeproxy-deployment": "d1"}
    response = replayed(blob, {"x-request-id": "again"})
    assert isinstance(response, StreamingResponse)
    sent = await _send_through(response)
    assert _body(sent) == SSE
    start = dict((k.decode(), v.decode()) for k, v in sent[0]["headers"])
    assert start["x-request-id"] == "again"
    assert "x-ratelimit-remaining-requests" not in start


def test_only_complete_successes_without_secrets_under_the_cap_are_kept() -> None:
    ok: list[tuple[bytes, bytes]] = [(b"content-type", b"application/json")]
    assert reply_of(_tee(500, [b"{}"], ok), stream=False, complete=True) is None
    assert reply_of(_tee(200, [b"{}"], ok), stream=False, complete=False) is None
    cut = _tee(200, [b"{"], ok)
    cut.messages[-1]["more_body"] = True  # never ended
    assert reply_of(cut, stream=False, complete=True) is None
    secret = b'{"echo": "sk-proj-abcdefghijklmnopqrstuvwxyz0123456789"}'
    assert reply_of(_tee(200, [secret], ok), stream=False, complete=True) is None
    noise = random.Random(7).randbytes(MAX_REPLY_BYTES + 1000)  # incompressible, over the cap
    assert reply_of(_tee(200, [noise], ok), stream=False, complete=True) is None


async def test_a_lease_written_in_the_earlier_reply_format_is_still_replayed() -> None:
    head: dict[str, Any] = {
        "status": 200,
        "headers": [["content-type", "application/json"], ["x-edgeproxy-deployment", "d1"]],
        "stream": False,
    }
    blob = zlib.compress(json.dumps(head).encode() + b"\0" + b'{"id":"x"}')
    response = replayed(blob, {"x-request-id": "r2"})
    sent = await _send_through(response)
    assert _body(sent) == b'{"id":"x"}'
    start = dict((k.decode(), v.decode()) for k, v in sent[0]["headers"])
    assert start["content-type"] == "application/json"
    assert start["x-edgeproxy-deployment"] == "d1"
