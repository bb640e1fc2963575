"""The first call's answer, kept for its retries: captured from its ``Tee``, replayed as sent.

An idempotency key's answer is a ``state.answers.StoredAnswer``, the one
stored-answer format the response cache uses too, encoded (``encoded``: one
zlib blob) and kept inside the lease item (``state/dynamodb/dynamo_leases``)
so that a replay is the one read that found the key done. It keeps the
status, the headers that describe the answer (``STORED_HEADERS``; never a
request id or a rate-limit header), and the body bytes exactly as the client
received them (for a stream: its SSE bytes, replayed as a stream by
``api.stored.replay``: the request hash holds ``stream`` and
``stream_options``, so a replay always goes to a request that asked for
exactly that stream). It is built only from a complete success: status 200,
the response ended normally, a stream reached its ``Closing``, at most
``MAX_REPLY_BYTES`` compressed, and nothing in the body shaped like a
credential.

Leases written before the format was shared (a JSON head of ``status``,
``headers`` with the content type among them, and ``stream``) are still
replayed (``_earlier``) until their 24 hours are over.
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Mapping

from starlette.responses import Response

from edgeproxy.api.stored.capture import carries_secret
from edgeproxy.api.stored.replay import replayed as replay
from edgeproxy.api.tee import Tee
from edgeproxy.state.answers import STORED_HEADERS, StoredAnswer

MAX_REPLY_BYTES = 290_000  # compressed; as base64 (4/3) the lease item stays under 400 KB


def reply_of(tee: Tee, *, stream: bool, complete: bool) -> bytes | None:
    """The encoded answer of what ``tee`` recorded, or None if it may not be kept."""
    if tee.error is not None or not complete or not tee.messages:
        return None
    start, body = tee.messages[0], tee.messages[1:]
    ended = bool(body) and not body[-1].get("more_body", False)
    if start.get("type") != "http.response.start" or start.get("status") != 200 or not ended:
        return None
    data = b"".join(bytes(m.get("body", b"")) for m in body)
    if carries_secret(data):
        return None  # an answer that echoes something shaped like a key is never kept
    kept = [
        (k.decode("latin-1").lower(), v.decode("latin-1"))
        for k, v in start.get("headers", [])
        if k.decode("latin-1").lower() in STORED_HEADERS
    ]
    answer = StoredAnswer(
        status=200,
        content_type=next((v for k, v in kept if k == "content-type"), "application/json"),
        body=data,
        stored_at=0.0,  # an idempotent replay carries no ``Age``
        headers=tuple((k, v) for k, v in kept if k != "content-type"),
        stream=stream,
    )
    blob = answer.encoded()
    return blob if len(blob) <= MAX_REPLY_BYTES else None


def replayed(blob: bytes, extra: Mapping[str, str]) -> Response:
    """The stored answer as a response, with this request's own ``extra`` headers over it."""
    try:
        answer = StoredAnswer.decoded(blob)
    except ValueError:
        answer = _earlier(blob)
    return replay(answer, extra)


def _earlier(blob: bytes) -> StoredAnswer:
    """A reply of the lease's format before ``StoredAnswer`` (see the module doc)."""
    try:
        head, _, body = zlib.decompress(blob).partition(b"\0")
        fields = json.loads(head)
        headers = {str(k): str(v) for k, v in fields["headers"]}
        return StoredAnswer(
            status=int(fields["status"]),
            content_type=headers.pop("content-type", "application/json"),
            body=body,
            stored_at=0.0,
            headers=tuple(headers.items()),
            stream=bool(fields["stream"]),
        )
    except (zlib.error, KeyError, TypeError, ValueError) as exc:
        raise ValueError("not a stored reply") from exc
